"""THE data folder's layout (PERFWARDEN_DATA_DIR), every path under it made here:
- traces/<first two hex digits>/<sha256>: a trace file, content-addressed, stored once however
  many trace rows name it;
- timelines/<sha256>-<steps>.json: a trace's timeline, kept for the next page that asks;
- columns/: the loaded columns a rank of an incomplete set keeps for its set's analysis;
- staged/: files staged for a batch of runs (service/traces/uploads.py), their owners' tallies;
- tmp/: uploads being received.
A trace file removed takes its timelines and kept columns with it (remove_trace)."""
from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

# a sniffed format (collectors/traces/load.sniff) as a trace row records it; others are Kineto
FORMATS = {"nsys": "nsys", "nsys-gz": "nsys", "nsys-rep": "nsys-rep"}


def stored_format(sniffed: str) -> str:
    return FORMATS.get(sniffed, "kineto")


def trace_dir(data_dir: Path) -> Path:
    d = data_dir / "traces"
    d.mkdir(parents=True, exist_ok=True)
    return d


def path_for(data_dir: Path, sha: str) -> Path:
    return trace_dir(data_dir) / sha[:2] / sha


def commit_file(tmp: Path, data_dir: Path, sha: str) -> Path:
    """Move a received file to its content address; the same content stored already keeps the
    stored file and drops `tmp`."""
    final = path_for(data_dir, sha)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        tmp.unlink(missing_ok=True)
    else:
        shutil.move(str(tmp), final)
    return final


def tmp_dir(data_dir: Path) -> Path:
    d = data_dir / "tmp"
    d.mkdir(parents=True, exist_ok=True)
    return d


def staged_dir(data_dir: Path) -> Path:
    d = data_dir / "staged"
    d.mkdir(parents=True, exist_ok=True)
    return d


def timeline_path(data_dir: Path, sha: str, steps: int) -> Path:
    return data_dir / "timelines" / f"{sha}-{steps}.json"


def remove_trace(data_dir: Path, sha: str) -> None:
    """A trace file no row names any more, and everything derived from it: its timelines and its
    kept columns."""
    path_for(data_dir, sha).unlink(missing_ok=True)
    for folder, pattern in ((data_dir / "timelines", f"{sha}-*.json"),
                            (columns_dir(data_dir), f"{sha}*")):
        if folder.is_dir():
            for f in folder.glob(pattern):
                f.unlink(missing_ok=True)


def columns_dir(data_dir: Path) -> Path:
    """The loaded columns of ranks whose set is not complete yet (collectors/traces/columns.py):
    the set's analysis reads them rather than parsing every rank again; removed once the set's
    summary is recorded (traces/attach.sweep_columns)."""
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


LEFTOVER_TTL_S = 24 * 3600  # a temp file this old is a leftover whoever made it


def temp_name(kind: str) -> str:
    """The prefix of a temp file this process writes (`kind` names what it holds): the pid in
    it says whose the file is, so a start-up sweep removes those of processes gone."""
    return f"{kind}-{os.getpid()}-"


def _owner_gone(name: str, now: float, mtime: float) -> bool:
    """Whether a temp file named by temp_name (a dot before it allowed) outlived the process
    that wrote it (or LEFTOVER_TTL_S)."""
    if now - mtime > LEFTOVER_TTL_S:
        return True
    parts = name.lstrip(".").split("-")
    if len(parts) < 3 or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: alive
        return False
    return False


def sweep_leftovers(data_dir: Path) -> int:
    """At start: remove the temp files of requests and jobs a killed process left (received
    uploads, trace files being linked into storage, timelines being written). How many."""
    now, gone = time.time(), 0
    folders = [data_dir / "tmp", data_dir / "timelines"]
    traces = data_dir / "traces"
    if traces.is_dir():
        folders += [d for d in traces.iterdir() if d.is_dir()]
    for folder in folders:
        if not folder.is_dir():
            continue
        for f in folder.iterdir():
            if not f.name.startswith(("upload-", ".part-", ".timeline-")):
                continue
            with contextlib.suppress(FileNotFoundError):
                if _owner_gone(f.name, now, f.stat().st_mtime):
                    f.unlink()
                    gone += 1
    return gone
