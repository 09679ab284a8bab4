"""Open any supported trace file by its content (not only its name) and analyze one or many."""
from __future__ import annotations

import os
from pathlib import Path

from .analysis import Options, analyze
from .kineto import load_kineto
from .model import Trace, TraceError, concat_traces
from .nsys import SQLITE_MAGIC, export_nsys_rep, load_nsys_sqlite
from .progress import Progress


def sniff(path: Path) -> str:
    """'nsys', 'nsys-rep' or 'kineto'; raises TraceError for anything else."""
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if path.is_dir():
        raise TraceError(f"{path}: is a directory, not a trace file")
    with open(path, "rb") as f:
        head = f.read(64)
    if not head:
        raise TraceError(f"{path}: empty file")
    if head.startswith(SQLITE_MAGIC):
        return "nsys"
    if head[:2] == b"\x1f\x8b" or head.lstrip()[:1] in (b"{", b"["):
        return "kineto"
    if path.suffix == ".nsys-rep":
        return "nsys-rep"
    raise TraceError(f"{path}: unknown trace format (expected nsys .sqlite/.nsys-rep or Kineto "
                     ".json/.json.gz)")


def load_trace(path: str | os.PathLike, step_regex: str | None = None,
               progress: Progress | None = None) -> Trace:
    path = Path(path)
    kind = sniff(path)
    try:
        if kind == "nsys":
            return load_nsys_sqlite(path, progress)
        if kind == "nsys-rep":
            return load_nsys_sqlite(export_nsys_rep(path, progress), progress)
        return load_kineto(path, step_regex, progress)
    except TraceError:
        raise
    except (MemoryError, RecursionError):
        raise
    except Exception as e:  # a producer we did not foresee: still one clear line
        raise TraceError(f"{path}: cannot read trace ({type(e).__name__}: {e})") from None


def analyze_files(paths: list[str | os.PathLike], opts: Options | None = None,
                  progress: Progress | None = None) -> dict:
    """Analyze one trace, or the ranks of one run given as several files."""
    opts = opts or Options()
    traces = [load_trace(p, opts.step_regex, progress) for p in paths]
    return analyze(concat_traces(traces), opts)
