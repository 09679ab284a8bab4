"""Open any supported trace file by its content (not only its name); load the files of a rank set
in parallel (pipeline.py analyzes them)."""
from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from .. import forked
from . import columns
from .gz import inflate
from .kineto import load_kineto
from .model import Trace, TraceError
from .nsys import SQLITE_MAGIC, load_nsys_sqlite
from .progress import Progress


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
               progress: Progress | None = None, name: str | None = None,
               parts: int | None = None) -> Trace:
    """`parts`: processes for one large Kineto document (kineto.load_kineto)."""
    path = Path(path)
    kind = sniff(path, name)
    try:
        if kind == "nsys":
            return _no_events(path, load_nsys_sqlite(path, progress))
        if kind == "nsys-gz":
            with tempfile.TemporaryDirectory(prefix="perfwarden-") as tmp:
                plain = Path(tmp) / (path.name.removesuffix(".gz") or "trace.sqlite")
                with open(plain, "wb") as dst:
                    inflate(path, dst.write)
                trace = load_nsys_sqlite(plain, progress)
                trace.source = path.name
                return _no_events(path, trace)
        if kind == "nsys-rep":
            return _no_events(path, load_nsys_sqlite(export_nsys_rep(path, progress), progress))
        return _no_events(path, load_kineto(path, step_regex, progress, parts))
    except TraceError:
        raise
    except (OSError, EOFError, zlib.error) as e:
        raise TraceError(f"{path}: cannot read trace ({e})") from None
    except (MemoryError, RecursionError):
        raise
    except Exception as e:  # noqa: BLE001 - a producer we did not foresee: still one clear line
        raise TraceError(f"{path}: cannot read trace ({type(e).__name__}: {e})") from None


# a Kineto/Chrome trace's events that say something happened (a span, its begin or end, an
# instant, a flow): metadata (`"ph": "M"`) alone is no trace
KINETO_EVENT = re.compile(rb'"ph"\s*:\s*"[XBEbeiIsf]"')
EVENT_HEAD = 8 << 20  # the inflated bytes looked at: Kineto writes its events near the start
# the nsys export's tables of events: kernels, copies, runtime calls, NVTX ranges
NSYS_EVENTS = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
               "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")


def check_events(path: str | os.PathLike) -> None:
    """TraceError (one line) unless the file holds trace events: a Kineto document with an
    event that is not metadata in its first EVENT_HEAD bytes, an nsys export with a row in a
    CUPTI or NVTX table (an .nsys-rep is taken as it is: only nsys can open it). A cheap look
    made before a trace leaves the machine; loading (load_trace) checks the whole file."""
    path = Path(path)
    kind = sniff(path)
    if kind == "kineto":
        with open(path, "rb") as f:
            zipped = f.read(2) == b"\x1f\x8b"
        try:
            with (gzip.open if zipped else open)(path, "rb") as f:
                head = f.read(EVENT_HEAD)
        except (OSError, EOFError, zlib.error) as e:
            raise TraceError(f"{path}: cannot read trace ({e})") from None
        if not KINETO_EVENT.search(head):
            raise TraceError(f"{path}: no trace events (a JSON file without Kineto/Chrome trace "
                             "events is not a trace)")
    elif kind == "nsys":
        import sqlite3

        try:
            con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
            try:
                tables = {n for (n,) in con.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                rows = any(con.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()
                           for t in NSYS_EVENTS if t in tables)
            finally:
                con.close()
        except sqlite3.DatabaseError as e:
            raise TraceError(f"{path}: not a readable nsys SQLite export ({e})") from None
        if not rows:
            raise TraceError(f"{path}: no trace events (no CUPTI kernel, copy or runtime rows, no "
                             "NVTX ranges): not an nsys trace")


def _no_events(path: Path, trace: Trace) -> Trace:
    if not len(trace.ops) and not len(trace.calls) and not len(trace.ranges):
        raise TraceError(f"{path}: no trace events (no kernel, copy, runtime call or range): "
                         "not a trace")
    return trace


# the rank number in a trace file's name: `trace_M1_rank3.json.gz`, SGLang's `-TP-3-`, `tp3`
RANK_IN_NAME = re.compile(r"(?:TP-|rank[_-]?|TP|tp)(\d+)")


def rank_of(name: str) -> int | None:
    """The rank a trace file's name gives (the one place this is read from names)."""
    m = RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def _load_quiet(path: str, step_regex: str | None, name: str | None, parts: int,
                then: Callable[[Trace], Any] | None = None) -> Trace:
    return _prepared(_named(load_trace(path, step_regex, None, name, parts), name), then)


def _prepared(trace: Trace, then: Callable[[Trace], Any] | None) -> Trace:
    if then is not None:
        trace.prepared = then(trace)
    return trace


def _named(trace: Trace, name: str | None) -> Trace:
    if name:
        trace.source = name  # stored by content hash: the rank rows name the uploaded file
    return trace


def load_traces(paths: Sequence[str | os.PathLike], step_regex: str | None = None,
                progress: Progress | None = None, jobs: int | None = None,
                names: Sequence[str] | None = None, keep_in: Path | None = None,
                then: Callable[[Trace], Any] | None = None) -> list[Trace]:
    """Load several files (the ranks of one run), in parallel processes across cores: each
    file's decode is independent, and the loaded columns come back as numpy arrays. `names`:
    the files' own names where they are stored under others. `keep_in`: a folder where each
    file's loaded columns are kept (columns.py): a file loaded before is read from there, not
    parsed again, and one parsed now is saved there. `then(trace)`: computed of each file parsed
    now, in the process that parsed it (a picklable callable), as its `prepared`."""
    files = [str(p) for p in paths]
    given: list[str | None] = list(names) if names is not None else [None] * len(files)
    out: list[Trace | None] = [None] * len(files)
    kept = [columns.key_path(keep_in, Path(p), step_regex) if keep_in and Path(p).is_file()
            else None for p in files]  # a missing file: load_trace names it
    for i, k in enumerate(kept):
        if k is not None and k.exists():
            out[i] = columns.read(k)
    todo = [i for i, t in enumerate(out) if t is None]
    workers = min(len(todo), jobs or os.cpu_count() or 1)
    if workers <= 1:
        for i in todo:
            out[i] = _prepared(_named(load_trace(files[i], step_regex, progress, given[i]),
                                      given[i]), then)
    else:
        _load_parallel(files, given, todo, out, step_regex, progress, workers, then)
    for i in todo:
        k = kept[i]
        if k is not None and out[i] is not None:
            try:  # kept to save time only: a disk that refuses them costs a parse later
                columns.save(cast(Trace, out[i]), k)
            except (OSError, TypeError, ValueError) as e:
                (progress or Progress(None)).note(f"columns of {Path(files[i]).name} not kept: {e}")
    return [_named(t, n) for t, n in zip(out, given) if t is not None]


def _load_parallel(files: list[str], given: list[str | None], todo: list[int],
                   out: list[Trace | None], step_regex: str | None, progress: Progress | None,
                   workers: int, then: Callable[[Trace], Any] | None) -> None:
    import concurrent.futures as cf
    import multiprocessing as mp

    prog = progress or Progress(None)
    prog.note(f"loading {len(todo)} trace files in {workers} processes")
    # forkserver/spawn would re-import the caller; fork is safe here (no threads hold locks we use)
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    # its workers die with this process and hold none of its sockets (collectors/forked.py)
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=forked.settle,
                                initargs=(os.getpid(), set(), False)) as pool:
        parts = max(1, (os.cpu_count() or 1) // workers)  # each file's pieces share the rest
        futs = {pool.submit(_load_quiet, files[i], step_regex, given[i], parts, then): i
                for i in todo}
        for done, fut in enumerate(cf.as_completed(futs), 1):
            i = futs[fut]
            out[i] = fut.result()
            prog.note(f"loaded {given[i] or Path(files[i]).name} ({done}/{len(todo)})")


def export_nsys_rep(path: Path, progress: Progress | None = None) -> Path:
    """Run `nsys export --type sqlite` on a report; returns the SQLite file (in a temp dir)."""
    nsys = os.environ.get("NSYS") or shutil.which("nsys")
    if not nsys:
        raise TraceError(f"{path}: .nsys-rep needs nsys to export it (not on PATH, NSYS unset); "
                         "export it with `nsys export --type sqlite` and pass the .sqlite")
    out = Path(tempfile.mkdtemp(prefix="perfwarden-")) / (path.stem + ".sqlite")
    if progress:
        progress.note(f"exporting {path.name} with {nsys}")
    r = subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o",
                        str(out), str(path)], capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise TraceError(f"{path}: nsys export failed: {last[0]}")
    return out
