"""PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped.

Decoding uses msgspec with typed structs where it is installed (only the fields analysis needs are
materialized, the rest of each event is skipped in C); without msgspec, the standard library's
json does the same job more slowly, so the collector still works on bare GPU images.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from . import kineto_events as ev
from . import kineto_split as split
from .gz import inflate
from .kineto_events import msgspec
from .kineto_scan import BATCH, Columns
from .kineto_times import exact_ns, first_exact_times, needs_exact
from .model import Calls, Ops, Ranges, StreamWait, Trace, TraceError
from .progress import Progress

BIG_FILE_BYTES = 32 << 20  # progress lines only for files worth waiting for
__all__ = ["BIG_FILE_BYTES", "exact_ns", "load_kineto", "read_bytes"]

def read_bytes(path: Path, progress: Progress | None = None) -> bytes | bytearray:
    """The whole JSON text. Gzip is inflated chunk by chunk into one growing buffer, so the
    compressed and inflated copies never sit in memory twice over, within the caps on inflated
    bytes and ratio (gz.inflate)."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic != b"\x1f\x8b":
        return path.read_bytes()
    if progress:
        progress.note(f"decompressing {path.name} ({path.stat().st_size / 1e6:.0f} MB gzip)")
    out = bytearray()
    inflate(path, out.extend)
    return out


def _events(path: Path, raw: bytes | bytearray) -> tuple[int, Iterator[list[Any]], bool]:
    """(event count, batches of events, exact). With msgspec the document is first split into
    raw event slices (cheap), then decoded a batch at a time, so decoded events never pile up.
    `exact`: the timestamps are absolute epoch microseconds; events then carry the numbers'
    text for exact_ns."""
    head = bytes(raw[:4096]).lstrip()
    if not head or head[:1] not in (b"{", b"["):
        raise TraceError(f"{path}: not a JSON trace (expected a Chrome trace object)")
    if msgspec is not None and head[:1] == b"{":
        whole = _whole(path, raw)
        if whole is not None:
            return whole
    if msgspec is not None:
        try:
            if head[:1] == b"[":
                slices = ev.RAW_LIST.decode(raw)
            else:
                slices = ev.RAW_DOC.decode(raw).traceEvents
                if not slices and b'"traceEvents"' not in raw:
                    raise TraceError(f"{path}: JSON object has no traceEvents field")
            first: list[Any] = ev.LIST.decode(b"[" + b",".join(slices[:BATCH]) + b"]")
            exact = needs_exact(first)
            if exact:
                first = ev.EXACT_LIST.decode(b"[" + b",".join(slices[:BATCH]) + b"]")
        except msgspec.ValidationError:
            slices = None  # unusual field types: the generic path below copes
        except msgspec.DecodeError as e:
            raise TraceError(f"{path}: malformed JSON ({e})") from None
        if slices is not None:
            decoder = ev.EXACT_LIST if exact else ev.LIST

            def batches() -> Iterator[list[Any]]:
                yield first
                for i in range(BATCH, len(slices), BATCH):
                    try:
                        yield decoder.decode(b"[" + b",".join(slices[i:i + BATCH]) + b"]")
                    except msgspec.ValidationError:  # a rare odd event: decode it generically
                        yield [_GenericEvent(e) for e in json.loads(
                            b"[" + b",".join(slices[i:i + BATCH]) + b"]", parse_float=Decimal)
                            if isinstance(e, dict)]
            return len(slices), batches(), exact
    try:
        doc = json.loads(raw, parse_float=Decimal)  # exact; converted below as the magnitude needs
    except (ValueError, UnicodeDecodeError) as e:
        raise TraceError(f"{path}: malformed JSON ({str(e).splitlines()[0]})") from None
    if isinstance(doc, dict):
        if "traceEvents" not in doc:
            raise TraceError(f"{path}: JSON object has no traceEvents field")
        doc = doc["traceEvents"]
    if not isinstance(doc, list):
        raise TraceError(f"{path}: traceEvents is not a list")
    events = [_GenericEvent(e) for e in doc if isinstance(e, dict)]
    exact = needs_exact(events)
    return len(events), iter([events]), exact


def _whole(path: Path, raw: bytes | bytearray) -> tuple[int, Iterator[list[Any]], bool] | None:
    """The document decoded typed in one call (no raw split first); None where a field has an
    unusual type or the times are absolute epoch microseconds: the batched scan copes."""
    events = ev.decode_tagged(raw, True)
    if events is not None:
        if needs_exact(events[:BATCH]):
            return None
        return len(events), iter([events]), False
    try:
        events = ev.DOC.decode(raw).traceEvents
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError as e:
        raise TraceError(f"{path}: malformed JSON ({e})") from None
    if not events and b'"traceEvents"' not in raw:
        raise TraceError(f"{path}: JSON object has no traceEvents field")
    if needs_exact(events[:BATCH]):
        return None
    return len(events), iter([events]), False


class _GenericArgs:
    __slots__ = ("device", "stream", "correlation", "wait_on_stream",
                 "wait_on_cuda_event_record_corr_id")

    def __init__(self, a: dict):
        for k in self.__slots__:
            setattr(self, k, a.get(k))


class _GenericEvent:
    __slots__ = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args")

    def __init__(self, e: dict):
        self.ph = e.get("ph", "")
        self.cat = e.get("cat", "") or ""
        self.name = e.get("name", "")  # read by Columns.name_of, whatever its type
        self.pid = e.get("pid", 0)
        self.tid = e.get("tid", 0)
        self.ts = e.get("ts", 0.0)
        self.dur = e.get("dur", 0.0)
        a = e.get("args")
        self.args = _GenericArgs(a) if isinstance(a, dict) else None


def load_kineto(path: str | Path, step_regex: str | None = None,
                progress: Progress | None = None, parts: int | None = None) -> Trace:
    """`parts`: how many processes scan a document of at least kineto_split.SPLIT_MIN_BYTES
    a piece at a time (default: one per core, up to 8; 1: this process alone); smaller ones are
    decoded in one call."""
    path = Path(path)
    prog = progress or Progress(None)
    big = path.stat().st_size > BIG_FILE_BYTES
    rx = re.compile(step_regex) if step_regex else None
    raw: Any = None
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        raw = read_bytes(path, prog if big else None)
    cols = None
    procs = split.processes(len(raw) if gz else path.stat().st_size, parts)
    if procs:
        src = raw if gz else split.open_plain(path)
        if src is not None:
            if big:
                prog.note(f"parsing {path.name} ({len(src) / 1e6:.0f} MB JSON) a piece at a "
                          f"time in {procs} process{'es' if procs > 1 else ''}")
            prog.start(len(src), f"scanning {path.name}")
            try:
                cols = split.scan(src, rx, procs, lambda n: prog.advance(n, "bytes"))
            finally:
                if not gz:
                    src.close()
    if cols is None:
        if raw is None:
            raw = read_bytes(path)
        if big:
            prog.note(f"parsing {path.name} ({len(raw) / 1e6:.0f} MB JSON)")
        try:
            cols = _scan(path, raw, rx, prog)
        except OverflowError:
            raise TraceError(f"{path}: an id (device, stream, correlation) is past 64 bits") \
                from None
    del raw
    trace = _trace(path, cols)
    if big:
        prog.done(f"{path.name}: {len(trace.ops):,} GPU ops, {len(trace.calls):,} launch calls, "
                  f"{len(trace.ranges):,} step ranges")
    return trace


def _scan(path: Path, raw: bytes | bytearray, rx: re.Pattern | None,
          prog: Progress) -> Columns:
    """The whole document in one process: through the C filter where it takes the text
    (kineto_events.decode_filtered) and no time among the first BATCH events is epoch
    microseconds; else a batch of events at a time."""
    head = bytes(raw[:4096]).lstrip()[:1]
    kept = ev.decode_filtered(raw, True, BATCH, False) if head == b"{" else \
        ev.decode_filtered(raw, False, BATCH, False) if head == b"[" else None
    if kept is not None and first_exact_times(kept[0].head_ts) is None:
        cols = Columns(False, rx)
        cols.add_filtered(*kept)
        return cols
    n_events, batches, exact = _events(path, raw)
    prog.start(n_events, f"scanning {path.name}")
    cols = Columns(exact, rx)
    for events in batches:  # tagged (decode_tagged) or typed events
        (cols.add_tagged if events and type(events[0]) in ev.TAGGED else cols.add_all)(events)
        prog.advance(len(events), "events")
    return cols


def _trace(path: Path, cols: Columns) -> Trace:
    exact = cols.exact

    def ns(values: Any) -> np.ndarray:
        if exact:
            return np.asarray(values, dtype=np.int64)
        return np.rint(np.asarray(values, dtype=np.float64) * 1000.0).astype(np.int64)

    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    o_start = ns(cols.o_ts)
    ops = Ops(o_start, o_start + ns(cols.o_dur), i64(cols.o_dev), i64(cols.o_stream),
              i64(cols.o_corr), np.full(len(cols.o_ts), -1, dtype=np.int64),
              np.asarray(cols.o_name, dtype=np.int32), np.asarray(cols.o_kind, dtype=np.int8))
    c_start = ns(cols.c_ts)
    calls = Calls(c_start, c_start + ns(cols.c_dur), i64(cols.c_thr), i64(cols.c_corr),
                  i64(cols.c_proc))
    # Kineto correlation ids are unique per file; a GPU op's process is its launch call's.
    _inherit_proc(ops, calls)
    r_start = ns(cols.r_ts)
    ranges = Ranges(r_start, r_start + ns(cols.r_dur), i64(cols.r_thr), i64(cols.r_proc),
                    cols.r_names)
    trace = Trace(ops=ops, calls=calls, ranges=ranges, names=list(cols.names), source=path.name,
                  producer="kineto")
    trace.device_labels = {int(d): f"GPU {int(d)}" for d in np.unique(ops.device)}
    trace.range_name_counts = cols.range_counts
    trace.has_sync_records = bool(cols.syncs)
    trace.waits = _waits(cols.syncs, calls)
    if cols.n_bad:
        trace.warnings.append(f"{path.name}: skipped {cols.n_bad} events with non-numeric ts/dur")
    return trace


def _inherit_proc(ops: Ops, calls: Calls) -> None:
    if not len(ops):
        return
    if not len(calls):
        ops.proc[:] = 0
        return
    order = np.argsort(calls.corr, kind="stable")
    sc = calls.corr[order]
    pos = np.clip(np.searchsorted(sc, ops.corr), 0, len(sc) - 1)
    hit = sc[pos] == ops.corr
    ops.proc[:] = np.where(hit, calls.proc[order][pos], 0)


def _waits(syncs: list, calls: Calls) -> list[StreamWait]:
    """`Stream Wait Event` sync events as edges (spec/metrics.md, Stream waits in Kineto traces).
    The stream waited
    on is `wait_on_stream`, else the stream of the sync event whose correlation is
    `wait_on_cuda_event_record_corr_id`, else -1 (unresolved: the ordering check then reads a
    wait on a main stream as joining the device's aux work launched before it)."""
    if not syncs:
        return []
    corr_to_start = dict(zip(calls.corr.tolist(), calls.start_ns.tolist()))
    corr_to_proc = dict(zip(calls.corr.tolist(), calls.proc.tolist()))
    stream_of = {corr: stream for _, _, stream, _, corr, _ in syncs if stream >= 0 and corr >= 0}
    out = []
    for name, dev, stream, on_stream, corr, rec_corr in syncs:
        if "wait" not in name.lower():
            continue
        if on_stream < 0 and rec_corr >= 0:
            on_stream = stream_of.get(rec_corr, -1)
        out.append(StreamWait(dev, stream, on_stream, corr_to_proc.get(corr, 0),
                              corr_to_start.get(corr, -1), corr_to_start.get(rec_corr, -1), corr))
    return out
