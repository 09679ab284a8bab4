"""Content-addressed trace storage: uploads stream to disk (never whole in memory), size limits,
file checks; the analysis is THE trace pipeline (collectors/traces/pipeline.py)."""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

from fastapi import Request

from collectors.traces import Options, TraceError
from collectors.traces.analysis import project, step_regex_of, timeline
from collectors.traces.load import load_trace, sniff
from collectors.traces.nsys_schema import connect as nsys_connect
from collectors.traces.pipeline import SERVER_CHECK, analyze_files
from collectors.traces.steps import keep_regex
from collectors.traces.summary import TraceSummary

from .errors import Invalid, NotFound, TooLarge
from .sandbox import Sandbox, sandboxed

ALLOWED_SUFFIXES = (".sqlite", ".nsys-rep", ".json", ".json.gz", ".sqlite.gz", ".gz")
KERNELS_KEPT = 50
SPILL_BYTES = 1 << 20  # an upload is hashed and written in a thread, a MiB at a time
TIMELINES_AT_ONCE = 2  # sandboxed timeline analyses at once in one API process
_timelines = threading.BoundedSemaphore(TIMELINES_AT_ONCE)


def trace_dir(data_dir: Path) -> Path:
    d = data_dir / "traces"
    d.mkdir(parents=True, exist_ok=True)
    return d


def columns_dir(data_dir: Path) -> Path:
    """The loaded columns of ranks whose set is not complete yet (collectors/traces/columns.py):
    the set's analysis reads them rather than parsing every rank again; removed once the set's
    summary is recorded (usecases/traces.sweep_columns)."""
    return data_dir / "columns"


def kept_columns(data_dir: Path) -> dict[str, list[Path]]:
    """The columns kept now, by the sha256 of their trace file; temp files of a save that was
    killed (older than an hour) are removed on the way."""
    folder = columns_dir(data_dir)
    out: dict[str, list[Path]] = {}
    if not folder.is_dir():
        return out
    for f in folder.iterdir():
        if f.name.startswith(".columns-"):
            with contextlib.suppress(FileNotFoundError):
                if time.time() - f.stat().st_mtime > 3600:
                    f.unlink()
        elif f.suffix == ".npz":
            out.setdefault(f.name.split(".", 1)[0], []).append(f)
    return out


def path_for(data_dir: Path, sha: str) -> Path:
    return trace_dir(data_dir) / sha[:2] / sha


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
    tmp_dir = data_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=tmp_dir, prefix="upload-")
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


FORMATS = {"nsys": "nsys", "nsys-gz": "nsys", "nsys-rep": "nsys-rep"}


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
    return FORMATS.get(fmt, "kineto")


def analyze_file(path: Path, filename: str, keep_in: Path | None = None,
                 sandbox: Sandbox | None = None) -> tuple[str, TraceSummary]:
    """(format, summary); TraceError becomes 422 naming the file. `keep_in`: where the file's
    loaded columns are kept for its set's analysis (analyze_set)."""
    try:
        fmt = sniff(path, filename)
    except TraceError as e:
        raise Invalid(str(e).replace(str(path), filename), "body", code="bad_trace") from None
    return FORMATS.get(fmt, "kineto"), analyze_set([(path, filename)], keep_in, sandbox)


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def _analyze(paths: list[Path], names: list[str], keep_in: Path | None,
             sandbox: Sandbox | None) -> TraceSummary:
    """THE trace pipeline, sandboxed."""
    def work() -> TraceSummary:
        return analyze_files(paths, Options(), check=SERVER_CHECK, names=names, keep_in=keep_in)
    return sandboxed(work, _size(paths), sandbox)


def _named(e: TraceError, files: list[tuple[Path, str]]) -> str:
    """The error with the stored files' paths as their uploaded names; one that names no file
    (a limit of the analysis) names them all."""
    msg = str(e)
    if not any(str(p) in msg for p, _ in files):
        msg = f"{', '.join(name for _, name in files)}: {msg}"
    for p, name in files:
        msg = msg.replace(str(p), name)
    return msg


def analyze_set(files: list[tuple[Path, str]], keep_in: Path | None = None,
                sandbox: Sandbox | None = None) -> TraceSummary:
    """The ranks of one run (one file each): THE trace pipeline on the stored files, with the
    server's ordering check, in a sandboxed analysis process; TraceError (a limit of the
    sandbox too) becomes 422 naming the uploaded files. `keep_in`: the folder of the ranks'
    loaded columns (columns_dir), read where a rank's are there and saved where not."""
    try:
        summary = _analyze([p for p, _ in files], [name for _, name in files], keep_in, sandbox)
    except TraceError as e:
        raise Invalid(_named(e, files), "body", code="bad_trace") from None
    summary["source"] = ", ".join(name for _, name in files)
    summary["kernels"] = summary["kernels"][:KERNELS_KEPT]
    return summary


def commit_file(tmp: Path, data_dir: Path, sha: str) -> Path:
    final = path_for(data_dir, sha)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        tmp.unlink(missing_ok=True)
    else:
        shutil.move(str(tmp), final)
    return final


def _timeline(path: Path, filename: str, steps: int) -> dict:
    trace = load_trace(path, keep_regex(None), None, filename)
    data = timeline(trace, Options(), steps=steps)
    proj = project(trace, step_regex_of(trace))
    data["total_steps"] = int(proj.step_start_ns.shape[0])
    return data


def timeline_of(data_dir: Path, sha: str, filename: str, steps: int,
                sandbox: Sandbox | None = None) -> dict:
    """A trace's timeline of `steps` steps, parsed in a sandboxed process (at most
    TIMELINES_AT_ONCE at once here) and kept for the next request."""
    cache = data_dir / "timelines" / f"{sha}-{steps}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    path = path_for(data_dir, sha)
    if not path.exists():
        raise NotFound("trace file is missing from storage")
    try:
        with _timelines:
            data = sandboxed(lambda: _timeline(path, filename, steps), _size([path]), sandbox)
    except TraceError as e:
        raise Invalid(_named(e, [(path, filename)]), code="bad_trace") from None
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(data))
    return data
