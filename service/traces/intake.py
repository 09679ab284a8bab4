"""Upload intake: the file name's check, the body streamed to a temp file with its SHA-256
(never whole in memory) under the size limit, at the pace the API process's uploads share, and
the check that the file is a trace at all before the request answers (its analysis is a job)."""
from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

from fastapi import Request

from collectors.traces import TraceError
from collectors.traces.load import sniff
from collectors.traces.nsys_schema import connect as nsys_connect

from ..errors import Invalid, TooLarge
from .storage import stored_format, temp_name, tmp_dir

ALLOWED_SUFFIXES = (".sqlite", ".nsys-rep", ".json", ".json.gz", ".sqlite.gz", ".gz")
SPILL_BYTES = 1 << 20  # an upload is hashed and written in a thread, a MiB at a time


def check_filename(filename: str | None) -> str:
    if not filename:
        raise Invalid("filename: query parameter ?filename= is required",
                       "filename")
    name = os.path.basename(filename.replace("\\", "/"))
    if not name or len(name) > 200 or name != filename:  # no folders, no ../
        raise Invalid("filename: must be a plain file name of at most "
                       "200 characters", "filename")
    if not name.endswith(ALLOWED_SUFFIXES):
        raise Invalid("filename: expected .sqlite, .nsys-rep, .json or "
                       ".json.gz", "filename")
    return name


class Pace:
    """The uploads of one API process share `bytes_s` bytes per second (none: unpaced). An
    upload runs at full speed on loopback and takes a core for its socket reads, hashing and
    writes (2 GB of rank traces: 4.3 s of CPU in 7 s, measured); paced, it leaves the gate's
    requests the CPU they need. Each MiB books its slot after the ones booked before it."""

    def __init__(self, bytes_s: float | None) -> None:
        self.bytes_s, self.next_at = bytes_s, 0.0

    async def take(self, n: int) -> None:
        if not self.bytes_s:
            return
        now = time.monotonic()
        at = max(now, self.next_at)
        self.next_at = at + n / self.bytes_s
        if at > now:
            await asyncio.sleep(at - now)


async def receive(request: Request, data_dir: Path, limit: int, pace: Pace | None = None
                  ) -> tuple[Path, str, int]:
    """Stream the body into a temp file with its SHA-256, a MiB at a time at the `pace`; 413
    past `limit` (file removed)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"trace is larger than the {limit:,}-byte limit")
    fd, name = tempfile.mkstemp(dir=tmp_dir(data_dir), prefix=temp_name("upload"))
    h = hashlib.sha256()
    size = 0
    buf = bytearray()

    def spill(f: BinaryIO, data: bytes) -> None:  # in a thread: a write the kernel holds back
        h.update(data)                             # (dirty-page writeback) never stalls the
        f.write(data)                              # event loop's other requests

    try:
        with os.fdopen(fd, "wb") as f:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise TooLarge(f"trace is larger than the {limit:,}-byte limit")
                buf += chunk
                if len(buf) >= SPILL_BYTES:
                    await asyncio.to_thread(spill, f, bytes(buf))
                    if pace is not None:
                        await pace.take(len(buf))
                    buf.clear()
            if buf:
                await asyncio.to_thread(spill, f, bytes(buf))
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    if size == 0:
        Path(name).unlink(missing_ok=True)
        raise Invalid("body: empty trace file", "body")
    return Path(name), h.hexdigest(), size


def check_file(path: Path, filename: str) -> str:
    """What the upload request checks before it answers (the analysis is a job): the file is a
    trace at all (its magic bytes; a plain SQLite file opens). Returns the format;
    TraceError becomes 422 naming the file."""
    import sqlite3

    try:
        fmt = sniff(path, filename)
        if fmt == "nsys":
            try:
                con = nsys_connect(f"file:{path}?mode=ro&immutable=1")
                try:
                    con.execute("SELECT count(*) FROM sqlite_master").fetchone()
                finally:
                    con.close()
            except sqlite3.DatabaseError as e:
                raise TraceError(f"{path}: not a readable SQLite database ({e})") from None
    except TraceError as e:
        raise Invalid(str(e).replace(str(path), filename), "body", code="bad_trace") from None
    return stored_format(fmt)
