"""PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped.

Decoding uses msgspec with typed structs where it is installed (only the fields analysis needs are
materialized, the rest of each event is skipped in C); without msgspec, the standard library's
json does the same job more slowly, so the collector still works on bare GPU images.
"""
from __future__ import annotations

import gzip
import json
import re
import types
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Union

import numpy as np

from .model import OP_KERNEL, OP_MEMCPY, OP_MEMSET, Calls, Ops, Ranges, StreamWait, Trace, TraceError
from .progress import Progress

OP_CATS = {"kernel": OP_KERNEL, "gpu_memcpy": OP_MEMCPY, "gpu_memset": OP_MEMSET,
           "memcpy": OP_MEMCPY, "memset": OP_MEMSET}
CALL_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
RANGE_CATS = {"user_annotation", "operator"}
SYNC_CATS = {"cuda_sync"}
BIG_FILE_BYTES = 32 << 20  # progress lines only for files worth waiting for

_gzip: types.ModuleType
try:  # optional: Intel ISA-L inflates gzip about twice as fast as zlib
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover
    _gzip = gzip

try:  # optional fast path
    import msgspec

    Num = Union[int, str, None]

    class _Args(msgspec.Struct, gc=False):
        device: Num = None
        stream: Num = None
        correlation: Num = None
        wait_on_stream: Num = None
        wait_on_cuda_event_record_corr_id: Num = None

    class _Event(msgspec.Struct, gc=False):
        # names stay raw JSON (a view into the buffer) until an event that needs one is found:
        # most events are CPU ops whose names analysis never reads
        ph: str = ""
        cat: str = ""
        name: msgspec.Raw = msgspec.Raw(b'""')
        pid: Union[int, str] = 0
        tid: Union[int, str] = 0
        ts: Union[float, str] = 0.0
        dur: Union[float, str] = 0.0
        args: Union[_Args, None] = None

    class _ExactEvent(_Event, gc=False):
        # absolute epoch microseconds (older PyTorch, about 1.7e15) do not survive float64:
        # such traces keep the numbers' text and convert it exactly (_exact_ns)
        ts: Union[msgspec.Raw, str] = msgspec.Raw(b"0")  # type: ignore[assignment]
        dur: Union[msgspec.Raw, str] = msgspec.Raw(b"0")  # type: ignore[assignment]

    class _Doc(msgspec.Struct, gc=False):
        traceEvents: list[_Event] = []

    class _RawDoc(msgspec.Struct, gc=False):
        traceEvents: list[msgspec.Raw] = []

    _DOC = msgspec.json.Decoder(_Doc)
    _RAW_DOC = msgspec.json.Decoder(_RawDoc)
    _RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
    _STR = msgspec.json.Decoder(str)
    _LIST = msgspec.json.Decoder(list[_Event])
    _EXACT_LIST = msgspec.json.Decoder(list[_ExactEvent])
    BATCH = 16384
except ImportError:  # pragma: no cover - exercised on GPU images without msgspec
    msgspec = None  # type: ignore[assignment]


def read_bytes(path: Path, progress: Progress | None = None) -> bytes | bytearray:
    """The whole JSON text. Gzip is inflated chunk by chunk into one growing buffer, so the
    compressed and inflated copies never sit in memory twice over."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic != b"\x1f\x8b":
        return path.read_bytes()
    if progress:
        progress.note(f"decompressing {path.name} ({path.stat().st_size / 1e6:.0f} MB gzip)")
    out = bytearray()
    try:
        with _gzip.open(path, "rb") as g:
            while True:
                chunk = g.read(1 << 24)
                if not chunk:
                    break
                out += chunk
    except (OSError, EOFError, zlib.error) as e:
        raise TraceError(f"{path}: broken gzip data ({e})") from None
    return out


# float64 microseconds times 1000 stay exact nanoseconds below this magnitude
EXACT_LIMIT_US = 2.0 ** 53 / 1000


def _exact_ns(v: Any) -> int:
    """A JSON number's text (microseconds) as exact integer nanoseconds (rounded half up)."""
    if isinstance(v, bool):
        raise TypeError("a boolean is no time")
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, Decimal):
        return int((v * 1000).to_integral_value(ROUND_HALF_UP))
    s = bytes(v).strip().strip(b'"') if not isinstance(v, str) else v.strip().encode()
    if s[:1] == b"-" or b"e" in s or b"E" in s:
        return int((Decimal(s.decode()) * 1000).to_integral_value(ROUND_HALF_UP))
    ip, _, fp = s.partition(b".")
    return int(ip or b"0") * 1000 + (int((fp + b"0000")[:4]) + 5) // 10


def _needs_exact(events: list[Any]) -> bool:
    for e in events:
        try:
            if float(e.ts) >= EXACT_LIMIT_US:
                return True
        except (TypeError, ValueError):
            continue
    return False


def _events(path: Path, raw: bytes | bytearray) -> tuple[int, Iterator[list[Any]], bool]:
    """(event count, batches of events, exact). With msgspec the document is first split into
    raw event slices (cheap), then decoded a batch at a time, so decoded events never pile up.
    `exact`: the timestamps are absolute epoch microseconds; events then carry the numbers'
    text for _exact_ns."""
    head = bytes(raw[:4096]).lstrip()
    if not head or head[:1] not in (b"{", b"["):
        raise TraceError(f"{path}: not a JSON trace (expected a Chrome trace object)")
    if msgspec is not None:
        try:
            if head[:1] == b"[":
                slices = _RAW_LIST.decode(raw)
            else:
                slices = _RAW_DOC.decode(raw).traceEvents
                if not slices and b'"traceEvents"' not in raw:
                    raise TraceError(f"{path}: JSON object has no traceEvents field")
            first: list[Any] = _LIST.decode(b"[" + b",".join(slices[:BATCH]) + b"]")
            exact = _needs_exact(first)
            if exact:
                first = _EXACT_LIST.decode(b"[" + b",".join(slices[:BATCH]) + b"]")
        except msgspec.ValidationError:
            slices = None  # unusual field types: the generic path below copes
        except msgspec.DecodeError as e:
            raise TraceError(f"{path}: malformed JSON ({e})") from None
        if slices is not None:
            decoder = _EXACT_LIST if exact else _LIST

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
    exact = _needs_exact(events)
    return len(events), iter([events]), exact


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
        self.name = e.get("name", "") or ""
        self.pid = e.get("pid", 0)
        self.tid = e.get("tid", 0)
        self.ts = e.get("ts", 0.0)
        self.dur = e.get("dur", 0.0)
        a = e.get("args")
        self.args = _GenericArgs(a) if isinstance(a, dict) else None


def _num(v: Any, default: int = -1) -> int:
    if v is None:
        return default
    if isinstance(v, (int, float)):
        return int(v)
    try:
        return int(str(v).strip())
    except ValueError:
        return default


def load_kineto(path: str | Path, step_regex: str | None = None,
                progress: Progress | None = None) -> Trace:
    path = Path(path)
    prog = progress or Progress(None)
    big = path.stat().st_size > BIG_FILE_BYTES
    raw = read_bytes(path, prog if big else None)
    if big:
        prog.note(f"parsing {path.name} ({len(raw) / 1e6:.0f} MB JSON)")
    n_events, batches, exact = _events(path, raw)
    num: Callable[[Any], float | int] = _exact_ns if exact else float
    prog.start(n_events, f"scanning {path.name}")
    rx = re.compile(step_regex) if step_regex else None

    names: dict[str, int] = {}
    thread_keys: dict[tuple, int] = {}
    proc_keys: dict[Any, int] = {}
    # compact columns (8 bytes a value, no Python objects): a large trace has millions of ops
    tcode = "q" if exact else "d"  # exact: integer nanoseconds; else float microseconds
    o_ts: array[Any] = array(tcode)
    o_dur: array[Any] = array(tcode)
    o_dev, o_stream, o_corr, o_name, o_kind = (array("q") for _ in range(5))
    c_ts: array[Any] = array(tcode)
    c_dur: array[Any] = array(tcode)
    c_thr, c_corr, c_proc = (array("q") for _ in range(3))
    r_ts, r_dur, r_thr, r_proc, r_names = ([] for _ in range(5))
    range_counts: Counter = Counter()
    syncs = []
    name_cache: dict = {}

    def name_of(raw) -> str:
        if isinstance(raw, str):
            return raw
        key = bytes(raw)
        got = name_cache.get(key)
        if got is None:
            try:
                got = _STR.decode(key)
            except Exception:  # noqa: BLE001 - a non-string name
                got = key.decode(errors="replace")
            name_cache[key] = got
        return got

    n_bad = 0
    wanted: dict[str, str | None] = {}  # category as written -> lower-case if analysis uses it
    for events in batches:
        for e in events:
            if e.ph != "X":
                continue
            cat = wanted.get(e.cat, "")
            if cat == "":
                low = (e.cat or "").lower()
                cat = wanted[e.cat] = low if (low in OP_CATS or low in CALL_CATS or
                                              low in RANGE_CATS or low in SYNC_CATS) else None
            if cat is None:  # CPU ops and the like: most events, skipped before any parsing
                continue
            kind = OP_CATS.get(cat)
            try:
                ts = num(e.ts)
                dur = num(e.dur)
            except (TypeError, ValueError, ArithmeticError):
                n_bad += 1
                continue
            a = e.args
            if kind is not None:
                dev = _num(a.device) if a is not None else -1
                if dev < 0:
                    dev = _num(e.pid, 0)
                o_ts.append(ts)
                o_dur.append(dur)
                o_dev.append(dev)
                o_stream.append(_num(a.stream) if a is not None and a.stream is not None
                                else _num(e.tid, 0))
                o_corr.append(_num(a.correlation) if a is not None else -1)
                o_name.append(names.setdefault(name_of(e.name), len(names)))
                o_kind.append(kind)
            elif cat in CALL_CATS:
                if a is None or a.correlation is None:
                    continue
                c_ts.append(ts)
                c_dur.append(dur)
                c_thr.append(thread_keys.setdefault((e.pid, e.tid), len(thread_keys)))
                c_corr.append(_num(a.correlation))
                c_proc.append(proc_keys.setdefault(e.pid, len(proc_keys)))
            elif cat in RANGE_CATS:
                nm = name_of(e.name)
                if cat == "user_annotation":
                    range_counts[nm] += 1
                if rx is not None and not rx.search(nm):
                    continue
                r_ts.append(ts)
                r_dur.append(dur)
                r_thr.append(thread_keys.setdefault((e.pid, e.tid), len(thread_keys)))
                r_proc.append(proc_keys.setdefault(e.pid, len(proc_keys)))
                r_names.append(nm)
            elif cat in SYNC_CATS and a is not None:
                syncs.append((name_of(e.name), _num(a.device, 0), _num(a.stream), _num(a.wait_on_stream),
                              _num(a.correlation), _num(a.wait_on_cuda_event_record_corr_id)))
        prog.advance(len(events), "events")

    def ns(values: Any) -> np.ndarray:
        if exact:
            return np.asarray(values, dtype=np.int64)
        return np.rint(np.asarray(values, dtype=np.float64) * 1000.0).astype(np.int64)

    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    o_start = ns(o_ts)
    ops = Ops(o_start, o_start + ns(o_dur), i64(o_dev), i64(o_stream), i64(o_corr),
              np.full(len(o_ts), -1, dtype=np.int64), np.asarray(o_name, dtype=np.int32),
              np.asarray(o_kind, dtype=np.int8))
    c_start = ns(c_ts)
    calls = Calls(c_start, c_start + ns(c_dur), i64(c_thr), i64(c_corr), i64(c_proc))
    # Kineto correlation ids are unique per file; a GPU op's process is its launch call's.
    _inherit_proc(ops, calls)
    r_start = ns(r_ts)
    ranges = Ranges(r_start, r_start + ns(r_dur), i64(r_thr), i64(r_proc), r_names)
    trace = Trace(ops=ops, calls=calls, ranges=ranges, names=list(names), source=path.name,
                  producer="kineto")
    trace.device_labels = {int(d): f"GPU {int(d)}" for d in np.unique(ops.device)}
    trace.range_name_counts = range_counts
    trace.has_sync_records = bool(syncs)
    trace.waits = _waits(syncs, calls)
    if n_bad:
        trace.warnings.append(f"{path.name}: skipped {n_bad} events with non-numeric ts/dur")
    if big:
        prog.done(f"{path.name}: {len(ops):,} GPU ops, {len(calls):,} launch calls, "
                  f"{len(ranges):,} step ranges")
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
    """`Stream Wait Event` sync events as edges (spec/metrics.md v1.2, item 3). The stream waited
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
