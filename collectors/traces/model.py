"""One in-memory model of a trace, whatever produced it.

Everything is a column (numpy array) so analysis vectorizes over millions of ops. Times are
integer nanoseconds (spec/metrics.md). Threads, processes and devices are small integer keys;
the loader keeps their labels beside them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

OP_KERNEL, OP_MEMCPY, OP_MEMSET, OP_GRAPH = 0, 1, 2, 3
# OP_GRAPH: a whole CUDA graph replay, traced as one row (nsys without --cuda-graph-trace=node)
OP_KIND_NAMES = {OP_KERNEL: "kernel", OP_MEMCPY: "memcpy", OP_MEMSET: "memset", OP_GRAPH: "graph"}


class TraceError(ValueError):
    """A trace that cannot be read; the message is one line naming the file and the problem."""


@dataclass
class Ops:
    """GPU ops: kernels, memcpys and memsets."""

    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    device: np.ndarray  # int64, global device key (see Trace.device_labels)
    stream: np.ndarray  # int64, stream id as the producer numbers it
    corr: np.ndarray  # int64 correlation id
    proc: np.ndarray  # int64 process key
    name_id: np.ndarray  # int32 index into Trace.names
    kind: np.ndarray  # int8, OP_*

    def __len__(self) -> int:
        return int(self.start_ns.shape[0])


@dataclass
class Calls:
    """Host launch calls (runtime/driver API) that enqueue ops."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    thread: np.ndarray  # int64 thread key
    corr: np.ndarray
    proc: np.ndarray

    def __len__(self) -> int:
        return int(self.start_ns.shape[0])


@dataclass
class Ranges:
    """Host ranges (NVTX / record_function) on a thread."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    thread: np.ndarray
    proc: np.ndarray
    names: list[str]

    def __len__(self) -> int:
        return int(self.start_ns.shape[0])


@dataclass
class StreamWait:
    """A stream-wait edge: `stream` on `device` waits for an event recorded on `on_stream`.

    `call_ns` is when the wait was enqueued by the host, `record_call_ns` when the event it waits
    for was recorded (both host times, -1 when unknown). `on_stream` is -1 where the producer did
    not resolve it (PyTorch 2.11's Kineto); `corr` is the wait call's correlation id (-1: unknown).
    """

    device: int
    stream: int
    on_stream: int
    proc: int
    call_ns: int
    record_call_ns: int
    corr: int = -1


@dataclass
class Trace:
    ops: Ops
    calls: Calls
    ranges: Ranges
    names: list[str]
    device_labels: dict[int, str] = field(default_factory=dict)
    source: str = ""
    producer: str = ""
    waits: list[StreamWait] = field(default_factory=list)
    has_sync_records: bool = False
    warnings: list[str] = field(default_factory=list)
    graph_trace_rows: int = 0
    range_name_counts: Counter = field(default_factory=Counter)
    # what the process that loaded this rank computed of it for the analysis (pipeline.py); not
    # part of the trace: concat_traces and the kept columns leave it out
    prepared: Any = None


def rank_offsets(traces: list[Trace]) -> list[tuple[int, int, int]]:
    """Where each rank's devices, processes and threads start once the ranks are joined
    (concat_traces): (device, process, thread) offsets, in rank order."""
    out = []
    dev_off = proc_off = thr_off = 0
    for t in traces:
        out.append((dev_off, proc_off, thr_off))
        o, c, r = t.ops, t.calls, t.ranges
        dev_off += _span(o.device, t.device_labels)
        proc_off += _span(np.concatenate([o.proc, c.proc, r.proc]), {})
        thr_off += _span(np.concatenate([c.thread, r.thread]), {})
    return out


def concat_traces(traces: list[Trace]) -> Trace:
    """Join the ranks of one run (one trace per file): devices, threads and processes stay apart."""
    if len(traces) == 1:
        return traces[0]
    name_index: dict[str, int] = {}
    ops_parts, call_parts, range_parts = [], [], []
    range_names: list[str] = []
    labels: dict[int, str] = {}
    waits: list[StreamWait] = []
    warnings: list[str] = []
    counts: Counter = Counter()
    for t, (dev_off, proc_off, thr_off) in zip(traces, rank_offsets(traces)):
        remap = np.array([name_index.setdefault(n, len(name_index)) for n in t.names], dtype=np.int32)
        o = t.ops
        ops_parts.append(Ops(o.start_ns, o.end_ns, o.device + dev_off, o.stream, o.corr,
                             o.proc + proc_off, remap[o.name_id] if len(o) else o.name_id, o.kind))
        c = t.calls
        call_parts.append(Calls(c.start_ns, c.end_ns, c.thread + thr_off, c.corr, c.proc + proc_off))
        r = t.ranges
        range_parts.append((r.start_ns, r.end_ns, r.thread + thr_off, r.proc + proc_off))
        range_names.extend(r.names)
        for k, v in t.device_labels.items():
            labels[k + dev_off] = f"{t.source}:{v}" if t.source else v
        for w in t.waits:
            waits.append(StreamWait(w.device + dev_off, w.stream, w.on_stream, w.proc + proc_off,
                                    w.call_ns, w.record_call_ns, w.corr))
        warnings.extend(t.warnings)
        counts.update(t.range_name_counts)
    names = list(name_index)
    cat = np.concatenate
    ops = Ops(*(cat([getattr(p, f) for p in ops_parts]) for f in
                ("start_ns", "end_ns", "device", "stream", "corr", "proc", "name_id", "kind")))
    calls = Calls(*(cat([getattr(p, f) for p in call_parts]) for f in
                    ("start_ns", "end_ns", "thread", "corr", "proc")))
    r_start, r_end, r_thread, r_proc = (cat([p[i] for p in range_parts]) for i in range(4))
    ranges = Ranges(r_start, r_end, r_thread, r_proc, names=range_names)
    return Trace(ops=ops, calls=calls, ranges=ranges, names=names, device_labels=labels,
                 source=",".join(t.source for t in traces),
                 producer=",".join(sorted({t.producer for t in traces})), waits=waits,
                 has_sync_records=any(t.has_sync_records for t in traces), warnings=warnings,
                 graph_trace_rows=sum(t.graph_trace_rows for t in traces), range_name_counts=counts)


def _span(keys: np.ndarray, labels: dict[int, str]) -> int:
    top = int(keys.max()) + 1 if keys.size else 0
    if labels:
        top = max(top, max(labels) + 1)
    return top

