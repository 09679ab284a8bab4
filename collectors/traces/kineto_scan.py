"""The Kineto scan: only the events analysis needs become columns (spec/metrics.md).

The C filter (_kfilter.c) reads a document, or a piece of one, in one pass and writes only the
needed events' fields, already as columns, which one msgspec call decodes (`add_filtered`): an
event analysis never reads becomes no Python object. Where the filter is not built, or leaves
the text to the usual decode (odd field types, escapes, epoch times), msgspec decodes the
document into typed events holding only the fields analysis reads (names stay raw bytes until
an event needs one), which become columns through list comprehensions (`add`); the
one-event-at-a-time path (`add_each`) takes what is left. Every path gives the same columns.
"""
from __future__ import annotations

import json
import math
import re
from array import array
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from itertools import compress
from typing import Any

import numpy as np

from .kineto_events import CATEGORIES, STR, Complete
from .kineto_times import exact_ns
from .model import OP_KERNEL, OP_MEMCPY, OP_MEMSET

OP_CATS = {"kernel": OP_KERNEL, "gpu_memcpy": OP_MEMCPY, "gpu_memset": OP_MEMSET,
           "memcpy": OP_MEMCPY, "memset": OP_MEMSET}
CALL_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
RANGE_CATS = {"user_annotation", "operator"}
SYNC_CATS = {"cuda_sync"}
# by 1 + a category's place in the C filter's list (kineto_events.Filtered): an op's kind, and
# which categories are step ranges
FILTER_KINDS = [-1] + [OP_CATS.get(c, -1) for c in CATEGORIES]
FILTER_RANGES: list[str | None] = [None, *(c if c in RANGE_CATS else None for c in CATEGORIES)]
BATCH = 16384  # events decoded at a time by the one-piece scan
ADD_BATCH = 4096  # events turned into columns at a time (small lists stay in cache)

def _ints(values: list) -> bool:
    """All plain ints (no bools, no text, no None)."""
    return set(map(type, values)) == {int}


def _int(v: Any) -> int:
    return v if type(v) is int else _num(v)  # noqa: E721 - bool is no int here


def _num(v: Any, default: int = -1) -> int:
    if v is None:
        return default
    if isinstance(v, (int, float)):
        return int(v)
    try:
        return int(str(v).strip())
    except ValueError:
        return default


def _extend(column: array, values: Any) -> None:
    """A column extended by a list of numbers, or an array, of its type (numpy converts a list
    faster than the array type does, one call a value)."""
    column.frombytes(np.asarray(values, dtype=np.float64 if column.typecode == "d"
                                else np.int64).tobytes())


def _pick(table: list[int], places: list[int]) -> np.ndarray:
    """table[p] for each p in places."""
    return np.asarray(table, dtype=np.int64)[np.asarray(places, dtype=np.int64)]


def _none(_: Any) -> None:
    return None


class _Categories(dict):
    """Category as written -> its lower-case name where analysis uses it, else None; filled on
    first sight, so one dict lookup an event classifies it."""

    def __init__(self, classify: Callable[[Any], str | None]):
        super().__init__()
        self.classify = classify

    def __missing__(self, cat: Any) -> str | None:
        got = self[cat] = self.classify(cat)
        return got


class Columns:
    """What the scan keeps of the needed events, as compact columns (8 bytes a value, no Python
    objects: a large trace has millions of ops). Key tables (names, threads, processes) number
    their entries in order of first appearance, so columns of consecutive chunks join exactly."""

    def __init__(self, exact: bool, rx: re.Pattern | None):
        tcode = "q" if exact else "d"  # exact: integer nanoseconds; else float microseconds
        self.exact, self.rx = exact, rx
        self.num: Callable[[Any], float | int] = exact_ns if exact else float
        self.o_ts: array[Any] = array(tcode)
        self.o_dur: array[Any] = array(tcode)
        self.o_dev, self.o_stream, self.o_corr, self.o_name, self.o_kind = (
            array("q") for _ in range(5))
        self.c_ts: array[Any] = array(tcode)
        self.c_dur: array[Any] = array(tcode)
        self.c_thr, self.c_corr, self.c_proc = (array("q") for _ in range(3))
        self.r_ts: list = []
        self.r_dur: list = []
        self.r_thr: list = []
        self.r_proc: list = []
        self.r_names: list[str] = []
        self.names: dict[str, int] = {}
        self.threads: dict[tuple, int] = {}
        self.procs: dict[Any, int] = {}
        self.range_counts: Counter = Counter()
        self.syncs: list[tuple] = []
        self.n_bad = 0
        self.n_events = 0
        self.epoch_at: int | None = None  # the split scan: its first epoch-time event (index)
        self._wanted: dict[str, str | None] = {}  # category as written -> lower-case if used
        self._name_cache: dict = {}
        self._raw_ids: dict[bytes, int] = {}  # a name's JSON text -> its number
        self._low = _Categories(self.category)  # category as written -> lower-case if used

    def shed(self) -> None:
        """Drop the lookup caches (before the columns travel to another process)."""
        self._name_cache, self._raw_ids, self._low = {}, {}, _Categories(_none)

    def name_of(self, raw: Any) -> str:
        """A name as text: a string as it is, null as no name (""), any other JSON value as
        its JSON text, whichever decode read it (raw JSON text, or a value of the standard
        library's json)."""
        if isinstance(raw, str):
            return raw
        if raw is None or isinstance(raw, (bool, int, Decimal, float, list, dict)):
            return "" if raw is None else "true" if raw is True else "false" \
                if raw is False else str(raw) if isinstance(raw, (int, Decimal, float)) \
                else json.dumps(raw, default=str)
        key = bytes(raw)
        got = self._name_cache.get(key)
        if got is None:
            try:
                got = STR.decode(key)
            except Exception:  # noqa: BLE001 - a non-string name
                got = "" if key == b"null" else key.decode(errors="replace")
            self._name_cache[key] = got
        return got

    def category(self, cat: Any) -> str | None:
        got = self._wanted.get(cat, "")
        if got == "":
            low = (cat or "").lower()
            got = self._wanted[cat] = low if (low in OP_CATS or low in CALL_CATS or
                                              low in RANGE_CATS or low in SYNC_CATS) else None
        return got

    def add_tagged(self, events: list[Any]) -> None:
        """Keep the needed events of a list decoded by the tagged scan (decode_tagged): only
        the needed events carry fields, and they alone are turned into columns."""
        need = [e for e in events if type(e) is Complete]
        self.add_all(need)
        self.n_events += len(events) - len(need)

    def add_all(self, events: list[Any]) -> None:
        """Keep the needed events of any number, ADD_BATCH at a time."""
        for k in range(0, len(events), ADD_BATCH):
            self.add(events[k:k + ADD_BATCH])

    def add(self, events: list[Any]) -> None:
        """Keep the needed events of one batch (in document order). Typed events with float
        times go through list comprehensions; anything else through `add_each`."""
        if self.exact:
            return self.add_each(events)
        low = self._low
        x = [e for e in events if e.ph == "X" and low[e.cat] is not None]
        cats = {e.cat for e in x}
        opc = {c for c in cats if low[c] in OP_CATS}
        callc = {c for c in cats if low[c] in CALL_CATS}
        hostc = callc | {c for c in cats if low[c] in RANGE_CATS}
        syncc = {c for c in cats if low[c] in SYNC_CATS}
        ops = [e for e in x if e.cat in opc]
        host = [e for e in x if e.cat in hostc]
        times = [e.ts for e in ops] + [e.dur for e in ops] + [e.ts for e in host] + \
            [e.dur for e in host]
        if not set(map(type, times)) <= {float}:
            return self.add_each(events)
        self.n_events += len(events)
        self._ops_bulk(ops)
        self._host_bulk(host, callc, low)
        if syncc:
            for e in x:
                if e.cat in syncc and e.args is not None:
                    self._sync(e)

    def _ops_bulk(self, ops: list[Any]) -> None:
        if not ops:
            return
        args = [e.args for e in ops]
        plain = None not in args
        if plain:
            dev = [a.device for a in args]
            st = [a.stream for a in args]
            co = [a.correlation for a in args]
            plain = _ints(dev) and min(dev) >= 0 and _ints(st) and _ints(co)
        if not plain:  # missing args, text or negative devices: one value at a time
            dev = [_int(a.device if a is not None else None) for a in args]
            dev = [d if d >= 0 else _num(e.pid, 0) for d, e in zip(dev, ops)]
            sv = [a.stream if a is not None else None for a in args]
            st = [_int(v) if v is not None else _num(e.tid, 0) for v, e in zip(sv, ops)]
            co = [_int(a.correlation if a is not None else None) for a in args]
        self.o_ts.extend([e.ts for e in ops])
        self.o_dur.extend([e.dur for e in ops])
        self.o_dev.extend(dev)
        self.o_stream.extend(st)
        self.o_corr.extend(co)
        self.o_name.extend(self._name_ids([e.name for e in ops]))
        kind_of = {c: OP_CATS[str(self._wanted[c])] for c in {e.cat for e in ops}}
        self.o_kind.extend([kind_of[e.cat] for e in ops])

    def _name_ids(self, raws: list[Any]) -> list[int]:
        """Name numbers of raw JSON names (numbered in order of first appearance). The names
        are looked up by their JSON text, joined and split in one call each (JSON text holds
        no NUL byte); only a text not seen before is decoded."""
        try:
            parts = b"\x00".join(raws).split(b"\x00")
        except TypeError:  # names already decoded (str)
            parts = None
        names = self.names
        if parts is None or len(parts) != len(raws):
            return [names.setdefault(self.name_of(r), len(names)) for r in raws]
        ids = self._raw_ids
        out = [ids.get(b, -1) for b in parts]
        if -1 in out:
            for i, v in enumerate(out):
                if v == -1:
                    b = parts[i]
                    got = ids.get(b)
                    if got is None:
                        got = ids[b] = names.setdefault(self.name_of(b), len(names))
                    out[i] = got
        return out

    def add_filtered(self, f: Any, skipped: int) -> None:
        """Keep what the C filter wrote of a piece (kineto_events.Filtered): its rows as any
        events, its columns as they are; `skipped` events were passed over. Name, thread and
        process numbers come out as `add` gives them: in order of first appearance."""
        if f.rows:
            self.add_all(f.rows)
        self.n_events += skipped + len(f.o_ts) + len(f.c_ts) + len(f.r_ts)
        if f.o_ts:
            _extend(self.o_ts, f.o_ts)
            _extend(self.o_dur, f.o_dur)
            _extend(self.o_dev, f.o_dev)
            _extend(self.o_stream, f.o_stream)
            _extend(self.o_corr, f.o_corr)
            _extend(self.o_name, _pick(self._name_ids(f.names), f.o_name))
            _extend(self.o_kind, _pick(FILTER_KINDS, f.o_cat))
        if f.c_ts or f.r_ts:
            self._host_filtered(f)

    def _host_filtered(self, f: Any) -> None:
        """Launch calls (all kept: the filter dropped those without a correlation) and step
        ranges (kept by the step regex); a thread or process is numbered where it first
        appears among the kept ones."""
        kept = [self._range_kept(self.name_of(n), FILTER_RANGES[c])
                for n, c in zip(f.r_name, f.r_cat)]
        first = [x if x >= 0 else math.inf for x in f.t_first_call]
        for k, at in enumerate(f.r_at):
            if kept[k] and at < first[f.r_thread[k]]:
                first[f.r_thread[k]] = at
        threads, procs = self.threads, self.procs
        thr, prc = [-1] * len(first), [-1] * len(first)
        for _, t in sorted((x, t) for t, x in enumerate(first) if x != math.inf):
            thr[t] = threads.setdefault((f.t_pid[t], f.t_tid[t]), len(threads))
            prc[t] = procs.setdefault(f.t_pid[t], len(procs))
        if f.c_ts:
            _extend(self.c_ts, f.c_ts)
            _extend(self.c_dur, f.c_dur)
            _extend(self.c_corr, f.c_corr)
            _extend(self.c_thr, _pick(thr, f.c_thread))
            _extend(self.c_proc, _pick(prc, f.c_thread))
        if f.r_ts:
            self.r_ts.extend(compress(f.r_ts, kept))
            self.r_dur.extend(compress(f.r_dur, kept))
            self.r_thr.extend(map(thr.__getitem__, compress(f.r_thread, kept)))
            self.r_proc.extend(map(prc.__getitem__, compress(f.r_thread, kept)))
            self.r_names.extend(map(self.name_of, compress(f.r_name, kept)))

    def _host_bulk(self, host: list[Any], callc: set, low: dict) -> None:
        keep = [e for e in host if ((e.args is not None and e.args.correlation is not None)
                                    if e.cat in callc else
                                    self._range_kept(self.name_of(e.name), low[e.cat]))]
        threads, procs = self.threads, self.procs
        thr = [threads.setdefault((e.pid, e.tid), len(threads)) for e in keep]
        prc = [procs.setdefault(e.pid, len(procs)) for e in keep]
        is_call = [e.cat in callc for e in keep]
        calls = [i for i, c in enumerate(is_call) if c]
        rngs = [i for i, c in enumerate(is_call) if not c]
        self.c_ts.extend([keep[i].ts for i in calls])
        self.c_dur.extend([keep[i].dur for i in calls])
        self.c_thr.extend([thr[i] for i in calls])
        corr = [keep[i].args.correlation for i in calls]
        self.c_corr.extend(corr if not corr or _ints(corr) else [_int(v) for v in corr])
        self.c_proc.extend([prc[i] for i in calls])
        self.r_ts.extend([keep[i].ts for i in rngs])
        self.r_dur.extend([keep[i].dur for i in rngs])
        self.r_thr.extend([thr[i] for i in rngs])
        self.r_proc.extend([prc[i] for i in rngs])
        self.r_names.extend([self.name_of(keep[i].name) for i in rngs])

    def _range_kept(self, nm: str, cat: str | None) -> bool:
        if cat == "user_annotation":
            self.range_counts[nm] += 1
        return self.rx is None or bool(self.rx.search(nm))

    def _sync(self, e: Any) -> None:
        a = e.args
        self.syncs.append((self.name_of(e.name), _num(a.device, 0), _num(a.stream),
                           _num(a.wait_on_stream), _num(a.correlation),
                           _num(a.wait_on_cuda_event_record_corr_id)))

    def add_each(self, events: list[Any]) -> None:
        """One event at a time: exact (text) times, non-float times, the generic path."""
        self.n_events += len(events)
        num = self.num
        for e in events:
            if e.ph != "X":
                continue
            cat = self.category(e.cat)
            if cat is None:  # CPU ops and the like: most events, skipped before any parsing
                continue
            try:
                ts = num(e.ts)
                dur = num(e.dur)
            except (TypeError, ValueError, ArithmeticError):
                self.n_bad += 1
                continue
            kind = OP_CATS.get(cat)
            if kind is not None:
                self._op(e, kind, ts, dur)
            elif cat in CALL_CATS:
                self._call(e, ts, dur)
            elif cat in RANGE_CATS:
                self._range(e, cat, ts, dur)
            elif e.args is not None:
                self._sync(e)

    def _op(self, e: Any, kind: int, ts: Any, dur: Any) -> None:
        a = e.args
        dev = _num(a.device) if a is not None else -1
        if dev < 0:
            dev = _num(e.pid, 0)
        self.o_ts.append(ts)
        self.o_dur.append(dur)
        self.o_dev.append(dev)
        self.o_stream.append(_num(a.stream) if a is not None and a.stream is not None
                             else _num(e.tid, 0))
        self.o_corr.append(_num(a.correlation) if a is not None else -1)
        self.o_name.append(self.names.setdefault(self.name_of(e.name), len(self.names)))
        self.o_kind.append(kind)

    def _call(self, e: Any, ts: Any, dur: Any) -> None:
        a = e.args
        if a is None or a.correlation is None:
            return
        self.c_ts.append(ts)
        self.c_dur.append(dur)
        self.c_thr.append(self.threads.setdefault((e.pid, e.tid), len(self.threads)))
        self.c_corr.append(_num(a.correlation))
        self.c_proc.append(self.procs.setdefault(e.pid, len(self.procs)))

    def _range(self, e: Any, cat: str, ts: Any, dur: Any) -> None:
        nm = self.name_of(e.name)
        if cat == "user_annotation":
            self.range_counts[nm] += 1
        if self.rx is not None and not self.rx.search(nm):
            return
        self.r_ts.append(ts)
        self.r_dur.append(dur)
        self.r_thr.append(self.threads.setdefault((e.pid, e.tid), len(self.threads)))
        self.r_proc.append(self.procs.setdefault(e.pid, len(self.procs)))
        self.r_names.append(nm)
