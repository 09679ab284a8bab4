"""The ordering check: main-stream kernels that must never run while auxiliary work runs.

The shared-expert PR's hazard: a resident-grid (persistent) kernel can deadlock when submitted while
aux
work holds SMs its grid barrier needs. Observed overlap is one signal; the other is whether a
stream-wait edge *orders* the kernel after the aux work (one that merely did not overlap in this
trace is still a hazard when nothing orders it). Guarded kernels are named by kernel name
(`guarded_regex`) and/or by the NVTX phase they were launched in (`guard_range`). CUDA graph
replays have no host ranges nor waits of their own: their phase and edges come from the same
step launched eagerly (`eager_reference_step_<i>` ranges, or a separate eager trace); a name
also launched outside the phase there is ambiguous and not used.
"""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from . import intervals as iv
from .analysis import NS_PER_US, project, resolve_steps
from .model import Trace
from .options import Options, Projection
from .roles import Roles, graph_replays, stream_roles
from .verdict import ordering_verdict, verdict_reason

REFERENCE_REGEX = "eager_reference_step"
__all__ = ["REFERENCE_REGEX", "check_ordering", "launched_in", "ordering_verdict", "verdict_reason"]


def check_ordering(trace: Trace, guarded_regex: str | None = None, opts: Options | None = None,
                   proj: Projection | None = None, roles: Roles | None = None,
                   limit: int = 100, guard_range: str | None = None,
                   reference: Trace | None = None,
                   reference_regex: str = REFERENCE_REGEX) -> dict:
    if not guarded_regex and not guard_range:
        raise ValueError("ordering check: name the guarded kernels (a kernel-name regex) or the "
                         "NVTX range they are launched in")
    opts = resolve_steps(trace, opts)
    proj = proj or project(trace, str(opts.step_regex))
    roles = roles or stream_roles(trace, proj, opts)
    ops = trace.ops
    n = len(ops)
    ins = proj.op_step >= 0
    replay = graph_replays(trace)
    name_ok = np.ones(n, dtype=bool)
    if guarded_regex:
        rx = re.compile(guarded_regex)
        name_hit = np.array([bool(rx.search(nm)) for nm in trace.names], dtype=bool)
        name_ok = name_hit[ops.name_id] if n else name_ok
    on_main, is_aux = _role_masks(trace, roles)
    eager_guard = ins & ~replay & on_main & name_ok
    result: dict = {"guarded_regex": guarded_regex, "guard_range": guard_range}
    if guard_range:
        eager_guard &= launched_in(trace, proj, guard_range)
    # graph replays: the guarded phase's kernels by name, learned from eager launches
    ref = reference if reference is not None else trace
    reference_regex = _reference_regex(reference, opts, reference_regex)
    ref_proj = project(ref, reference_regex) if replay.any() else None
    replay_guard = np.zeros(n, dtype=bool)
    if replay.any():
        replay_guard = ins & replay & name_ok
        if guard_range:
            replay_guard &= _replayed_in_phase(trace, ref, ref_proj, guard_range, reference_regex,
                                               result, reference is not None)
    violations = _observed_overlap(trace, proj, eager_guard, replay_guard, is_aux, limit)
    checked, unordered = _unordered(trace, proj, np.flatnonzero(eager_guard), is_aux)
    if replay.any() and ref_proj is not None and len(ref_proj.step_names):
        # the replays' edges: those of the same step launched eagerly
        c2, u2, result["reference_guarded_kernels"] = _reference_unordered(
            ref, ref_proj, opts, guarded_regex, guard_range)
        checked += c2
        unordered += u2
        has_sync = trace.has_sync_records or ref.has_sync_records
    else:
        has_sync = trace.has_sync_records
    aux_in_steps = _aux_beside(trace, proj, eager_guard, replay_guard, is_aux)
    result.update({
        "producer": trace.producer,
        "aux_ops_in_guarded_steps": aux_in_steps,
        "guarded_kernels": int(eager_guard.sum() + replay_guard.sum()),
        "graph_replay_kernels": int(replay_guard.sum()),
        "violations": len(violations), "violation_list": violations[:limit],
        "sync_records": has_sync,
        "ordered_checked": checked if has_sync else None,
        "unordered": len(unordered) if has_sync else None,
        "unordered_list": unordered[:limit]})
    result["verdict"] = ordering_verdict(result)
    result["reason"] = verdict_reason(result)
    return result


def _reference_regex(reference: Trace | None, opts: Options, regex: str) -> str:
    """A separate eager trace without reference ranges: its own steps are the reference."""
    if reference is None or any(re.search(regex, nm) for nm in reference.ranges.names):
        return regex
    return str(resolve_steps(reference, replace(opts, step_regex=None, step_source="")
                             if not opts.step_source.startswith("--") else opts).step_regex)


def _replayed_in_phase(trace: Trace, ref: Trace, ref_proj: Projection | None, guard_range: str,
                       reference_regex: str, result: dict, separate: bool) -> np.ndarray:
    """Per op: its kernel name was launched only inside the guarded phase in the eager
    reference steps; `result["reference"]` says which names and steps."""
    names, ambiguous = _phase_names(ref, ref_proj, guard_range, reference_regex)
    result["reference"] = {"source": f"eager steps ({reference_regex})" + (
        f" in {ref.source}" if separate else ""),
        "steps": len(ref_proj.step_names) if ref_proj is not None else 0,
        "guarded_names": sorted(names), "ambiguous_names": sorted(ambiguous)}
    ok = np.array([nm in names for nm in trace.names], dtype=bool)
    return ok[trace.ops.name_id] if len(trace.ops) else np.zeros(0, dtype=bool)


def _reference_unordered(ref: Trace, ref_proj: Projection, opts: Options,
                         guarded_regex: str | None, guard_range: str | None
                         ) -> tuple[int, list[dict], int]:
    """The unordered check on the eager reference steps: (checked, unordered, guarded)."""
    r_main, r_aux = _role_masks(ref, stream_roles(ref, ref_proj, opts))
    r_guard = (ref_proj.op_step >= 0) & ~graph_replays(ref) & r_main
    if guarded_regex:
        rx = re.compile(guarded_regex)
        r_hit = np.array([bool(rx.search(nm)) for nm in ref.names], dtype=bool)
        r_guard &= r_hit[ref.ops.name_id] if len(ref.ops) else r_guard
    if guard_range:
        r_guard &= launched_in(ref, ref_proj, guard_range)
    checked, unordered = _unordered(ref, ref_proj, np.flatnonzero(r_guard), r_aux)
    for u in unordered:
        u["from"] = "eager reference step"
    return checked, unordered, int(r_guard.sum())


def _aux_beside(trace: Trace, proj: Projection, eager_guard: np.ndarray,
                replay_guard: np.ndarray, is_aux: np.ndarray) -> int:
    """Auxiliary ops in the guarded steps (for replays: ops on the device's other streams)."""
    ops = trace.ops
    guarded_steps = np.unique(proj.op_step[eager_guard | replay_guard])
    beside = np.isin(proj.op_step, guarded_steps) & (proj.op_step >= 0)
    aux_in_steps = int((beside & is_aux).sum())
    if replay_guard.any():  # replays: their branches run on the device's other streams
        for d, s in {(int(a), int(b)) for a, b in zip(ops.device[replay_guard],
                                                       ops.stream[replay_guard])}:
            aux_in_steps += int((beside & (ops.device == d) & (ops.stream != s)
                                 & ~replay_guard).sum())
    return aux_in_steps


def _role_masks(trace: Trace, roles: Roles) -> tuple[np.ndarray, np.ndarray]:
    ops = trace.ops
    on_main = np.zeros(len(ops), dtype=bool)
    is_aux = np.zeros(len(ops), dtype=bool)
    for d, s in roles.main.items():
        on_main |= (ops.device == d) & (ops.stream == s)
    for d, ss in roles.aux.items():
        if ss:
            is_aux |= (ops.device == d) & np.isin(ops.stream, list(ss))
    return on_main, is_aux


def launched_in(trace: Trace, proj: Projection, range_regex: str) -> np.ndarray:
    """Per op: its launch call lies inside a host range whose name matches, on the call's thread."""
    ops, r = trace.ops, trace.ranges
    out = np.zeros(len(ops), dtype=bool)
    rx = re.compile(range_regex)
    sel = np.array([i for i, nm in enumerate(r.names) if rx.search(nm)], dtype=np.int64)
    if sel.size == 0 or not len(ops):
        return out
    has = proj.op_call_start_ns >= 0
    for t in np.unique(r.thread[sel]):
        rs = sel[r.thread[sel] == t]
        rs = rs[np.argsort(r.start_ns[rs], kind="stable")]
        starts, ends = r.start_ns[rs], np.maximum.accumulate(r.end_ns[rs])
        k = np.flatnonzero(has & (proj.op_call_thread == t))
        if k.size == 0:
            continue
        c = proj.op_call_start_ns[k]
        j = np.searchsorted(starts, c, side="right") - 1
        ok = j >= 0
        out[k[ok]] = c[ok] <= ends[j[ok]]
    return out


def _phase_names(ref: Trace, ref_proj: Projection | None, guard_range: str,
                 reference_regex: str) -> tuple[set[str], set[str]]:
    """Kernel names launched inside the guarded range in eager reference steps, and those also
    launched outside it there (ambiguous: they cannot say which phase a replayed kernel is in)."""
    if ref_proj is None or not len(ref.ops):
        return set(), set()
    inside = launched_in(ref, ref_proj, guard_range)
    in_ref = (ref_proj.op_step >= 0) & ~graph_replays(ref)
    ids_in = set(np.unique(ref.ops.name_id[in_ref & inside]).tolist())
    ids_out = set(np.unique(ref.ops.name_id[in_ref & ~inside]).tolist())
    return ({ref.names[i] for i in ids_in - ids_out}, {ref.names[i] for i in ids_in & ids_out})


def _observed_overlap(trace: Trace, proj: Projection, eager_guard: np.ndarray,
                      replay_guard: np.ndarray, is_aux: np.ndarray, limit: int) -> list[dict]:
    """Guarded kernels that ran while other work ran: eager ones against the aux streams, graph
    replays (whose branches run on internal streams) against any other stream of the device."""
    ops = trace.ops
    ins = proj.op_step >= 0
    out: list[dict] = []
    for d in np.unique(ops.device[eager_guard | replay_guard]).tolist():
        dev = ops.device == d
        checks = [(np.flatnonzero(eager_guard & dev), None)]
        for s in np.unique(ops.stream[replay_guard & dev]).tolist():
            checks.append((np.flatnonzero(replay_guard & dev & (ops.stream == s)), s))
        for gsel, stream in checks:
            if gsel.size == 0:
                continue
            other = (is_aux & dev) if stream is None else (ins & dev & (ops.stream != stream))
            asel = np.flatnonzero(other)
            order = asel[np.argsort(ops.start_ns[asel], kind="stable")]
            _, ms, me = iv.merge(np.zeros(order.size, np.int64), ops.start_ns[order],
                                 ops.end_ns[order])
            ks, ke = ops.start_ns[gsel], ops.end_ns[gsel]
            overlap = iv.covered_before(ms, me, ke) - iv.covered_before(ms, me, ks)
            for j in np.flatnonzero(overlap > 0).tolist():
                k = int(gsel[j])
                if len(out) < limit:
                    lo = np.searchsorted(ops.start_ns[order], ops.end_ns[k], side="left")
                    cands = order[:lo]
                    cands = cands[ops.end_ns[cands] > ops.start_ns[k]][:3]
                    out.append({"step": int(proj.op_step[k]), "kernel": trace.names[int(ops.name_id[k])],
                                "device": d, "stream": int(ops.stream[k]),
                                "graph_replay": stream is not None,
                                "overlap_us": float(overlap[j]) / NS_PER_US,
                                "aux_kernels": [trace.names[int(ops.name_id[c])] for c in cands]})
                else:
                    out.append({})
    return out


def _unordered(trace: Trace, proj: Projection, guarded: np.ndarray,
               is_aux: np.ndarray) -> tuple[int, list[dict]]:
    """Guarded eager launches with aux work launched before them in their step and no
    stream-wait edge from each such aux stream after its last launch (spec: the ordering check).

    An edge is a wait of the guarded kernel's stream, enqueued before the guarded launch, on an
    event recorded on the aux stream no earlier than that stream's last launch. A wait whose
    stream waited on is unresolved (Kineto's `wait_on_stream: -1`) joins every aux stream whose
    last launch came before the wait (by correlation id; by host time where ids are missing):
    the guarded kernels are on the device's main stream, and spec/metrics.md, Stream waits in Kineto
    traces, reads such a wait as
    the main stream joining the aux work launched before it."""
    if not trace.has_sync_records or guarded.size == 0:
        return 0, []
    ops = trace.ops
    call = proj.op_call_start_ns
    checked = 0
    unordered: list[dict] = []
    devices = np.unique(ops.device[guarded]).tolist()
    for d in devices:
        gsel = guarded[ops.device[guarded] == d]
        asel = np.flatnonzero(is_aux & (ops.device == d) & (proj.op_step >= 0) & (call >= 0))
        if asel.size == 0:
            continue
        # aux launches by (stream, step, launch time): the last one before a guarded launch
        order = asel[np.lexsort((call[asel], proj.op_step[asel], ops.stream[asel]))]
        lanes = (ops.stream[order], proj.op_step[order], call[order], ops.corr[order])
        streams = np.unique(lanes[0]).tolist()
        edges = _edges(_device_waits(trace, gsel, d, len(devices)),
                       np.unique(ops.stream[gsel]).tolist(), streams)
        for k in gsel.tolist():
            if int(call[k]) < 0:
                continue
            missing = _missing(int(proj.op_step[k]), int(call[k]), edges[int(ops.stream[k])],
                               lanes, streams)
            if missing is None:
                continue  # no aux launch before the guarded one in its step
            checked += 1
            if missing:
                unordered.append({"step": int(proj.op_step[k]),
                                  "kernel": trace.names[int(ops.name_id[k])],
                                  "device": d, "stream": int(ops.stream[k]),
                                  "unjoined_aux_streams": missing})
    return checked, unordered


def _device_waits(trace: Trace, gsel: np.ndarray, d: int, n_devices: int) -> list:
    """A wait belongs to the process that enqueued it (nsys leaves deviceId 0 on every
    process's SYNCHRONIZATION rows); by device only when the process is unknown."""
    procs = set(trace.ops.proc[gsel].tolist())
    waits = [w for w in trace.waits if w.proc in procs]
    if not waits:
        waits = [w for w in trace.waits if w.device == d or n_devices == 1]
    return waits


Edge = tuple[np.ndarray, np.ndarray]


def _edges(waits: list, g_streams: list[int], streams: list[int]
           ) -> dict[int, dict[int, tuple[Edge, Edge, Edge, Edge]]]:
    """Per guarded stream and aux stream: the waits that can order the first after the second
    (resolved; unresolved by correlation id, by time without ids, by time at all)."""
    w_stream = np.array([w.stream for w in waits], dtype=np.int64)
    w_on = np.array([w.on_stream for w in waits], dtype=np.int64)
    w_call = np.array([w.call_ns for w in waits], dtype=np.int64)
    w_rec = np.array([w.record_call_ns if w.record_call_ns >= 0 else w.call_ns
                      for w in waits], dtype=np.int64)
    w_corr = np.array([w.corr for w in waits], dtype=np.int64)
    out: dict[int, dict[int, tuple[Edge, Edge, Edge, Edge]]] = {}
    for g in g_streams:
        un = (w_stream == g) & (w_on < 0)
        out[g] = {s: (_prefix(w_call, w_rec, (w_stream == g) & (w_on == s)),
                      _prefix(w_call, w_corr, un & (w_corr >= 0)),
                      _prefix(w_call, w_call, un & (w_corr < 0)),
                      _prefix(w_call, w_call, un)) for s in streams}
    return out


def _missing(step: int, launch: int, edges: dict, lanes: tuple, streams: list[int]
             ) -> list[int] | None:
    """The aux streams with work launched before `launch` in `step` that no wait joins; None
    when no aux stream launched anything before it in the step."""
    a_stream, a_step, a_call, a_corr = lanes
    missing = []
    any_prior = False
    for s in streams:
        lo = np.searchsorted(a_stream, s, side="left")
        hi = np.searchsorted(a_stream, s, side="right")
        lo2 = lo + np.searchsorted(a_step[lo:hi], step, side="left")
        hi2 = lo + np.searchsorted(a_step[lo:hi], step, side="right")
        j = lo2 + np.searchsorted(a_call[lo2:hi2], launch, side="left") - 1
        if j < lo2:
            continue  # no launch on s before the guarded one in this step
        any_prior = True
        last, last_corr = int(a_call[j]), int(a_corr[j])
        resolved, by_corr, by_time, by_time_all = edges[s]
        ok = _reaches(resolved, launch, last)
        if not ok and last_corr >= 0:
            ok = _reaches(by_corr, launch, last_corr + 1) or _reaches(by_time, launch, last)
        elif not ok:
            ok = _reaches(by_time_all, launch, last)
        if not ok:
            missing.append(s)
    return missing if any_prior else None


def _prefix(w_call: np.ndarray, value: np.ndarray, sel: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The selected waits by enqueue time, with the running maximum of `value`."""
    sel = sel & (w_call >= 0)
    idx = np.flatnonzero(sel)
    idx = idx[np.argsort(w_call[idx], kind="stable")]
    return w_call[idx], (np.maximum.accumulate(value[idx]) if idx.size else value[idx])


def _reaches(edge: tuple[np.ndarray, np.ndarray], launch: int, need: int) -> bool:
    """Some wait enqueued no later than `launch` has a value of at least `need`."""
    t, best = edge
    i = int(np.searchsorted(t, launch, side="right")) - 1
    return i >= 0 and int(best[i]) >= need
