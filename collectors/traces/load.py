"""Open any supported trace file by its content (not only its name) and analyze one or many."""
from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path

from .analysis import Options, analyze
from .kineto import load_kineto
from .model import Trace, TraceError, concat_traces
from .nsys import SQLITE_MAGIC, export_nsys_rep, load_nsys_sqlite
from .progress import Progress
from .summary import TraceSummary


def sniff(path: Path, name: str | None = None) -> str:
    """'nsys', 'nsys-gz', 'nsys-rep' or 'kineto'; raises TraceError for anything else.

    `name` is the original file name when the file is stored under another (content-addressed)."""
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
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as g:
                inner = g.read(16)
        except (OSError, EOFError) as e:
            raise TraceError(f"{path}: broken gzip data ({e})") from None
        return "nsys-gz" if inner.startswith(SQLITE_MAGIC) else "kineto"
    if head.lstrip()[:1] in (b"{", b"["):
        return "kineto"
    if path.suffix == ".nsys-rep" or (name or "").endswith(".nsys-rep"):
        return "nsys-rep"
    raise TraceError(f"{path}: unknown trace format (expected nsys .sqlite/.nsys-rep or Kineto "
                     ".json/.json.gz)")


def load_trace(path: str | os.PathLike, step_regex: str | None = None,
               progress: Progress | None = None, name: str | None = None) -> Trace:
    path = Path(path)
    kind = sniff(path, name)
    try:
        if kind == "nsys":
            return load_nsys_sqlite(path, progress)
        if kind == "nsys-gz":
            with tempfile.TemporaryDirectory(prefix="perfwarden-") as tmp:
                plain = Path(tmp) / (path.name.removesuffix(".gz") or "trace.sqlite")
                with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                trace = load_nsys_sqlite(plain, progress)
                trace.source = path.name
                return trace
        if kind == "nsys-rep":
            return load_nsys_sqlite(export_nsys_rep(path, progress), progress)
        return load_kineto(path, step_regex, progress)
    except TraceError:
        raise
    except (OSError, EOFError, zlib.error) as e:
        raise TraceError(f"{path}: cannot read trace ({e})") from None
    except (MemoryError, RecursionError):
        raise
    except Exception as e:  # noqa: BLE001 - a producer we did not foresee: still one clear line
        raise TraceError(f"{path}: cannot read trace ({type(e).__name__}: {e})") from None


def analyze_files(paths: Sequence[str | os.PathLike], opts: Options | None = None,
                  progress: Progress | None = None) -> TraceSummary:
    """Analyze one trace, or the ranks of one run given as several files."""
    opts = opts or Options()
    traces = [load_trace(p, opts.step_regex, progress) for p in paths]
    return analyze(concat_traces(traces), opts)
