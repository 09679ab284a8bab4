"""Nsight Systems SQLite exports (`nsys export --type sqlite`; load.py exports a `.nsys-rep`).

Any table may be absent; columns differ between schema versions, so every query is built from
what `sqlite_master` and `PRAGMA table_info` say is there.

The file is untrusted: it is opened and checked as nsys_schema.py says.
"""
from __future__ import annotations

import os
import sqlite3
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .intervals import unique_inverse
from .model import (
    OP_GRAPH,
    OP_KERNEL,
    OP_MEMCPY,
    OP_MEMSET,
    Calls,
    Ops,
    Ranges,
    StreamWait,
    Trace,
    TraceError,
)
from .nsys_schema import connect, refused_schema
from .progress import Progress

SQLITE_MAGIC = b"SQLite format 3\x00"
OP_TABLES = (("CUPTI_ACTIVITY_KIND_KERNEL", OP_KERNEL), ("CUPTI_ACTIVITY_KIND_MEMCPY", OP_MEMCPY),
             ("CUPTI_ACTIVITY_KIND_MEMSET", OP_MEMSET), ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", OP_GRAPH))
CALL_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")
NVTX_PUSHPOP, NVTX_STARTEND = 59, 60
SYNC_STREAM_WAIT = 2
CHUNK = 262144  # rowids per read: a few MB of text each
MAX_SPANS = 4096  # more rowid ranges than this (sparse rowids): chunks by the rows themselves
MAX_WORKERS = 4
READ_TABLES = frozenset(
    [t for t, _ in OP_TABLES] + list(CALL_TABLES)
    + ["NVTX_EVENTS", "StringIds", "META_DATA_EXPORT", "EXPORT_META_DATA", "TARGET_INFO_GPU",
       "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "ENUM_CUDA_MEMCPY_OPER",
       "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_CUDA_EVENT"])


def is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == SQLITE_MAGIC


class _Db:
    def __init__(self, path: Path):
        self.path = path
        self.uri = f"file:{path}?mode=ro&immutable=1"
        try:
            self.con = connect(self.uri)
            rows = self.con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
        except sqlite3.DatabaseError as e:
            raise TraceError(f"{path}: not a readable nsys SQLite export ({e})") from None
        why = refused_schema(rows, READ_TABLES)
        if why:
            raise TraceError(f"{path}: refused: {why} (an nsys export holds plain tables only)")
        self.tables = {name for kind, name, _, _ in rows if kind == "table"}
        self._cols: dict[str, dict[str, bool]] = {}
        self.workers = max(1, min(MAX_WORKERS, os.cpu_count() or 1))

    def cols(self, table: str) -> set[str]:
        return set(self._info(table))

    def _info(self, table: str) -> dict[str, bool]:
        """Column name -> declared NOT NULL (SQLite enforces it: no NULL to stand in for)."""
        if table not in self._cols:
            self._cols[table] = {r[1]: bool(r[3]) for r in
                                 self.con.execute(f'PRAGMA table_info("{table}")')}
        return self._cols[table]

    def count(self, table: str) -> int:
        if table not in self.tables:
            return 0
        return int(self.con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])

    def rowids(self, table: str) -> tuple[int, int] | None:
        """(smallest rowid - 1, largest rowid): two B-tree seeks, no scan (views are refused);
        None for a table without rowids."""
        if table not in self.tables:
            return (0, 0)
        try:
            lo, hi = (self.con.execute(f'SELECT {f}(rowid) FROM "{table}"').fetchone()[0]
                      for f in ("min", "max"))
        except sqlite3.OperationalError:
            return None
        return (int(lo) - 1, int(hi)) if isinstance(lo, int) and isinstance(hi, int) else (0, 0)

    def spans(self, table: str) -> list[tuple[int, int] | None]:
        """The rowid ranges a table is read in: CHUNK rowids each, or, where the rowids are
        sparse (more than MAX_SPANS such ranges), CHUNK rows each, their bounds found by
        stepping the rowid B-tree (one pass), so a file with rowids 1 and 2**62 is two rows."""
        ids = self.rowids(table)
        if ids is None:
            return [None]
        lo, hi = ids
        if (hi - lo) // CHUNK <= MAX_SPANS:
            return [(a, min(a + CHUNK, hi)) for a in range(lo, hi, CHUNK)]
        out: list[tuple[int, int] | None] = []
        q = f'SELECT rowid FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT 1 OFFSET ?'
        while lo < hi:
            row = self.con.execute(q, (lo, CHUNK - 1)).fetchone()
            end = hi if row is None else int(row[0])
            out.append((lo, end))
            lo = end
        return out

    def num(self, table: str, col: str, null: int = -1) -> str:
        """A column as an integer SQL expression (NULL -> `null`; float timestamps are rounded)."""
        if col not in self.cols(table):
            return str(null)
        kind = self.con.execute(f'SELECT typeof("{col}") FROM "{table}" WHERE "{col}" IS NOT NULL '
                                'LIMIT 1').fetchone()
        if kind and kind[0] == "real":
            return f'COALESCE(CAST(ROUND("{col}") AS INTEGER), {null})'
        if self._info(table)[col]:
            return f'"{col}"'  # NOT NULL: a COALESCE would add about 40% to the column's read
        return f'COALESCE("{col}", {null})'

    def fetch(self, table: str, exprs: list[str], where: str, progress: Progress | None = None,
              label: str = "") -> np.ndarray:
        """Integer columns of the rows matching `where`, in rowid order, as a (k, n) int64 array
        (one row per expression).

        One pass over the table: SQLite prints each column of a chunk of rows into one text of
        decimal numbers (no Python object per value; one group_concat per column, not a printf
        per row, which took twice the time) and numpy parses it. Every expression is non-NULL
        (num() gives NULL a stand-in), so group_concat, which skips NULLs, keeps the columns'
        rows aligned, and each column's count is checked. Chunks are rowid ranges read on their
        own connections in a few threads (sqlite3 releases the GIL while a statement runs)."""
        cats = ", ".join(f"group_concat({e}, ',')" for e in exprs)
        sql = f'SELECT count(*), {cats} FROM "{table}" WHERE ({where})'
        spans = self.spans(table)

        def one(span: tuple[int, int] | None) -> np.ndarray:
            con = connect(self.uri)
            try:
                q, args = (sql, ()) if span is None else (sql + " AND rowid > ? AND rowid <= ?", span)
                n, *texts = con.execute(q, args).fetchone()
            finally:
                con.close()
            out = np.empty((len(exprs), int(n)), dtype=np.int64)
            for j, text in enumerate(texts):
                out[j] = _parse(text, int(n), f"{self.path}: table {table}")
            return out

        parts = []
        with ThreadPoolExecutor(self.workers) as pool:
            for part in pool.map(one, spans):
                parts.append(part)
                if progress:
                    progress.advance(part.shape[1], label)
        if not parts:
            return np.zeros((len(exprs), 0), dtype=np.int64)
        return np.concatenate(parts, axis=1)

    def strings(self, ids: np.ndarray) -> dict[int, str]:
        if "StringIds" not in self.tables or ids.size == 0:
            return {}
        out: dict[int, str] = {}
        uniq = [int(i) for i in np.unique(ids) if i >= 0]
        for k in range(0, len(uniq), 900):
            part = uniq[k:k + 900]
            q = f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})"
            out.update((int(i), str(v)) for i, v in self.con.execute(q, part))
        return out


def _parse(text: str | None, rows: int, where: str) -> np.ndarray:
    """`rows` comma-separated integers; a value that is not one is a TraceError."""
    if not rows:
        return np.zeros(0, dtype=np.int64)
    # a text value (printed as it is) or an empty one fails the parse or the count
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns (and stops) where a value is not an integer
        try:
            flat = np.fromstring(text or "", dtype=np.int64, sep=",")
        except (DeprecationWarning, ValueError):
            flat = np.zeros(0, dtype=np.int64)
    if flat.size != rows:  # NULL where the schema says NOT NULL: only a corrupt file has one
        raise TraceError(f"{where} holds a value that is not an integer (or a NULL) where one "
                         "is needed")
    return flat


def _pid_of(global_id: np.ndarray) -> np.ndarray:
    return (global_id.astype(np.int64) >> 24) & 0xFFFFFF


def load_nsys_sqlite(path: str | os.PathLike, progress: Progress | None = None) -> Trace:
    path = Path(path)
    if not is_sqlite(path):
        raise TraceError(f"{path}: not an SQLite file (expected an nsys export)")
    db = _Db(path)
    if not any(t in db.tables for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS", "StringIds",
                                         "CUPTI_ACTIVITY_KIND_RUNTIME", "META_DATA_EXPORT",
                                         "EXPORT_META_DATA", "TARGET_INFO_GPU")):
        raise TraceError(f"{path}: SQLite file holds no Nsight Systems tables")
    spans = [db.rowids(t) for t in [t for t, _ in OP_TABLES] + list(CALL_TABLES)]
    total = sum(b - a for a, b in (s for s in spans if s))  # about the rows: no count(*) scans
    prog = progress or Progress(None)
    prog.start(total, f"reading {path.name}")
    ops = _load_ops(db, prog)
    calls = _load_calls(db, prog)
    ranges = _load_ranges(db)
    trace = Trace(ops=ops[0], calls=calls, ranges=ranges, names=ops[1], source=path.name,
                  producer=_producer(db), device_labels=_device_labels(db, ops[0]))
    trace.graph_trace_rows = db.count("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
    if trace.graph_trace_rows:
        trace.warnings.append(
            f"{path.name}: CUDA graphs were traced as whole graphs ({trace.graph_trace_rows} graph "
            "rows, the device work of their steps): the kernels inside the graphs have no rows "
            "of their own, so the kernel breakdown, the aux lanes and the ordering check do not "
            "see them; `nsys profile --cuda-graph-trace=node` records them")
    trace.waits, trace.has_sync_records = _load_waits(db)
    trace.range_name_counts = Counter(ranges.names)
    prog.done()
    return trace


def _producer(db: _Db) -> str:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in db.tables and {"name", "value"} <= db.cols(table):
            rows = dict(db.con.execute(f'SELECT name, value FROM "{table}"').fetchall())
            return f"nsys {rows.get('EXPORT_PRODUCT_VERSION', '?')} schema " \
                   f"{rows.get('EXPORT_SCHEMA_VERSION', '?')}"
    return "nsys"


def _device_labels(db: _Db, ops: Ops) -> dict[int, str]:
    labels = {int(d): f"GPU {int(d)}" for d in np.unique(ops.device)}
    if "TARGET_INFO_GPU" in db.tables and {"id", "name"} <= db.cols("TARGET_INFO_GPU"):
        for i, name in db.con.execute("SELECT id, name FROM TARGET_INFO_GPU"):
            if i is not None and int(i) in labels:
                labels[int(i)] = f"GPU {int(i)} ({name})"
    return labels


def _load_ops(db: _Db, prog: Progress) -> tuple[Ops, list[str]]:
    parts = []
    names: list[str] = []
    for table, kind in OP_TABLES:
        if table not in db.tables:
            continue
        cols = db.cols(table)
        need = {"start", "end", "streamId", "correlationId"}
        missing = need - cols
        if missing:
            raise TraceError(f"{db.path}: table {table} lacks column {sorted(missing)[0]}")
        if kind == OP_KERNEL:
            name = next((c for c in ("demangledName", "shortName", "mangledName", "nameId")
                         if c in cols), "-")
        elif kind == OP_GRAPH:
            name = next((c for c in ("graphExecId", "graphId") if c in cols), "-")
        else:
            name = "copyKind"
        exprs = [db.num(table, c) for c in ("start", "end", "deviceId", "streamId", "correlationId",
                                             "globalPid", name)]
        a = db.fetch(table, exprs, 'start IS NOT NULL AND "end" IS NOT NULL', prog, "ops")
        if not a.shape[1]:
            continue
        name_col = a[6]
        if kind == OP_KERNEL:
            lookup = db.strings(name_col)
            uniq, inv = unique_inverse(name_col)
            local = [lookup.get(int(u), f"kernel#{int(u)}") for u in uniq]
        elif kind == OP_GRAPH:  # one row per replay of a whole graph, named by its executable
            uniq, inv = unique_inverse(name_col)
            local = [f"CUDA graph exec {int(u)}" if u >= 0 else "CUDA graph" for u in uniq]
        else:
            uniq, inv = unique_inverse(name_col)
            base = "memcpy" if kind == OP_MEMCPY else "memset"
            kinds = _copy_kinds(db) if kind == OP_MEMCPY else {}
            local = [f"{base} {kinds.get(int(u), '')}".strip() if u >= 0 else base for u in uniq]
        offset = len(names)
        names.extend(local)
        parts.append(Ops(a[0], a[1], a[2], a[3], a[4], _pid_of(a[5]),
                         (inv + offset).astype(np.int32), np.full(a.shape[1], kind, dtype=np.int8)))
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return Ops(z, z, z, z, z, z, np.zeros(0, np.int32), np.zeros(0, np.int8)), names
    if len(parts) == 1:
        return parts[0], names
    fields = ("start_ns", "end_ns", "device", "stream", "corr", "proc", "name_id", "kind")
    return Ops(*(np.concatenate([getattr(p, f) for p in parts]) for f in fields)), names


def _copy_kinds(db: _Db) -> dict[int, str]:
    if "ENUM_CUDA_MEMCPY_OPER" in db.tables:
        return {int(i): str(lbl) for i, lbl in
                db.con.execute("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER")}
    return {}


def _load_calls(db: _Db, prog: Progress) -> Calls:
    parts = []
    for table in CALL_TABLES:
        if table not in db.tables:
            continue
        cols = db.cols(table)
        if not {"start", "end", "correlationId", "globalTid"} <= cols:
            continue
        exprs = [db.num(table, c) for c in ("start", "end", "globalTid", "correlationId")]
        a = db.fetch(table, exprs, "correlationId IS NOT NULL AND start IS NOT NULL", prog, "calls")
        parts.append(a)
    a = np.concatenate(parts, axis=1) if parts else np.zeros((4, 0), dtype=np.int64)
    return Calls(a[0], a[1], a[2], a[3], _pid_of(a[2]))


def _load_ranges(db: _Db) -> Ranges:
    """NVTX push/pop and start/end ranges: numbers in one pass, names from `text` (read only for
    the rows that hold one) or else `StringIds` via `textId`, decoded once per distinct id."""
    z = np.zeros(0, dtype=np.int64)
    table = "NVTX_EVENTS"
    if table not in db.tables:
        return Ranges(z, z, z, z, [])
    cols = db.cols(table)
    where = (f'eventType IN ({NVTX_PUSHPOP}, {NVTX_STARTEND}) AND "end" IS NOT NULL'
             ' AND start IS NOT NULL')
    has_text = "text" in cols
    exprs = [db.num(table, "start"), db.num(table, "end"),
             db.num(table, "globalTid", null=0),
             db.num(table, "textId"),
             "text IS NOT NULL" if has_text else "0"]
    a = db.fetch(table, exprs, where)
    if not a.shape[1]:
        return Ranges(z, z, z, z, [])
    text_id = a[3]
    lookup = db.strings(text_id[a[4] == 0])
    by_id = [lookup.get(int(i), "") for i in text_id.tolist()]
    if has_text and a[4].any():
        texts = iter(r[0] for r in db.con.execute(
            f'SELECT text FROM "{table}" WHERE ({where}) AND text IS NOT NULL ORDER BY rowid'))
        names = [next(texts) if flag else name for flag, name in zip(a[4].tolist(), by_id)]
    else:
        names = by_id
    return Ranges(a[0], a[1], a[2], _pid_of(a[2]), names)


def _load_waits(db: _Db) -> tuple[list[StreamWait], bool]:
    table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    if table not in db.tables:
        return [], False
    cols = db.cols(table)
    kind = "syncType" if "syncType" in cols else ("deprecatedSyncType" if "deprecatedSyncType"
                                                   in cols else None)
    if kind is None or not {"streamId", "correlationId", "eventId"} <= cols:
        return [], True
    call_time: dict[tuple[int, int], int] = {}
    for t in CALL_TABLES:
        if t in db.tables and {"correlationId", "globalTid", "start"} <= db.cols(t):
            q = (f'SELECT c.globalTid, c.correlationId, c.start FROM "{t}" c WHERE c.correlationId '
                 f'IN (SELECT correlationId FROM "{table}" UNION SELECT correlationId FROM '
                 f'CUPTI_ACTIVITY_KIND_CUDA_EVENT)' if "CUPTI_ACTIVITY_KIND_CUDA_EVENT" in db.tables
                 else f'SELECT c.globalTid, c.correlationId, c.start FROM "{t}" c WHERE '
                      f'c.correlationId IN (SELECT correlationId FROM "{table}")')
            for tid, corr, start in db.con.execute(q):
                call_time[(int(tid) >> 24 & 0xFFFFFF, int(corr))] = int(start)
    records: dict[tuple[int, int], tuple[int, int]] = {}
    if "CUPTI_ACTIVITY_KIND_CUDA_EVENT" in db.tables:
        ecols = db.cols("CUPTI_ACTIVITY_KIND_CUDA_EVENT")
        if {"eventId", "streamId", "correlationId", "globalPid"} <= ecols:
            for ev, stream, corr, gpid in db.con.execute(
                    "SELECT eventId, streamId, correlationId, globalPid "
                    "FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT"):
                pid = int(gpid) >> 24 & 0xFFFFFF
                records[(pid, int(ev))] = (int(stream), call_time.get((pid, int(corr)), -1))
    waits = []
    dev = "deviceId" if "deviceId" in cols else "0"
    for d, stream, corr, gpid, ev in db.con.execute(
            f'SELECT {dev}, streamId, correlationId, globalPid, eventId FROM "{table}" '
            f'WHERE {kind} = {SYNC_STREAM_WAIT}'):
        pid = int(gpid) >> 24 & 0xFFFFFF if gpid is not None else 0
        on_stream, rec_ns = records.get((pid, int(ev) if ev is not None else -1), (-1, -1))
        waits.append(StreamWait(int(d or 0), int(stream), on_stream, pid,
                                call_time.get((pid, int(corr)), -1), rec_ns, int(corr)))
    return waits, True
