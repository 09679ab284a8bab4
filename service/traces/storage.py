"""Content-addressed trace storage: a file lives at traces/<first two hex digits>/<sha256> under
the data folder, stored once however many trace rows name it; the loaded columns a rank of an
incomplete set keeps for its set's analysis; the format names a stored trace carries."""
from __future__ import annotations

import contextlib
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
