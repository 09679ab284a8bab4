"""The ordering check: main-stream kernels that must never run while auxiliary work runs.

The seed's hazard: a resident-grid (persistent) kernel can deadlock when submitted while
auxiliary-stream work holds SMs its grid-wide barrier needs. Observed overlap is one signal; the
other is whether anything *orders* the kernel after the auxiliary work (a stream-wait edge): a
kernel that merely happened not to overlap in this trace is still a hazard when nothing orders it.

Which kernels are guarded: by kernel name (`guarded_regex`), or by the NVTX phase they were
launched in (`guard_range`, e.g. `routed_experts`), or both. CUDA graph replays have no host range
around their kernels and no stream-wait records of their own, so for them the phase and the
ordering come from the same step launched eagerly: the benchmark's profile pass launches
`eager_reference_step_<i>` before the replays (another program can do the same, or pass an eager
trace of the same step). The graph is a capture of that very code, so its dependency edges are the
reference step's stream-wait edges; the kernels of the guarded phase are named by what the
reference step launched inside the range (a name also launched outside it is ambiguous and is
not used).
"""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from . import intervals as iv
from .analysis import (
    NS_PER_US,
    Options,
    Projection,
    Roles,
    graph_replays,
    project,
    resolve_steps,
    stream_roles,
)
from .model import Trace

REFERENCE_REGEX = "eager_reference_step"


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
    if reference is not None and not any(re.search(reference_regex, nm) for nm in ref.ranges.names):
        reference_regex = str(resolve_steps(ref, replace(opts, step_regex=None, step_source="")
                                            if not opts.step_source.startswith("--")
                                            else opts).step_regex)  # its own steps
    ref_proj = project(ref, reference_regex) if replay.any() else None
    replay_guard = np.zeros(n, dtype=bool)
    if replay.any():
        if guard_range:
            names, ambiguous = _phase_names(ref, ref_proj, guard_range, reference_regex)
            result["reference"] = {"source": f"eager steps ({reference_regex})" + (
                f" in {ref.source}" if reference is not None else ""),
                "steps": len(ref_proj.step_names) if ref_proj is not None else 0,
                "guarded_names": sorted(names), "ambiguous_names": sorted(ambiguous)}
            ok = np.array([nm in names for nm in trace.names], dtype=bool)
            replay_guard = ins & replay & name_ok & (ok[ops.name_id] if n else False)
        else:
            replay_guard = ins & replay & name_ok
    violations = _observed_overlap(trace, proj, eager_guard, replay_guard, is_aux, limit)
    eager_idx = np.flatnonzero(eager_guard)
    checked, unordered = _unordered(trace, proj, eager_idx, is_aux)
    if replay.any() and ref_proj is not None and len(ref_proj.step_names):
        # the replays' edges: those of the same step launched eagerly
        ref_roles = stream_roles(ref, ref_proj, opts)
        r_main, r_aux = _role_masks(ref, ref_roles)
        r_ins = ref_proj.op_step >= 0
        r_replay = graph_replays(ref)
        r_guard = r_ins & ~r_replay & r_main
        if guarded_regex:
            r_hit = np.array([bool(rx.search(nm)) for nm in ref.names], dtype=bool)
            r_guard &= r_hit[ref.ops.name_id] if len(ref.ops) else r_guard
        if guard_range:
            r_guard &= launched_in(ref, ref_proj, guard_range)
        c2, u2 = _unordered(ref, ref_proj, np.flatnonzero(r_guard), r_aux)
        checked += c2
        for u in u2:
            u["from"] = "eager reference step"
        unordered += u2
        result["reference_guarded_kernels"] = int(r_guard.sum())
        has_sync = trace.has_sync_records or ref.has_sync_records
    else:
        has_sync = trace.has_sync_records
    guarded_steps = np.unique(proj.op_step[eager_guard | replay_guard])
    beside = np.isin(proj.op_step, guarded_steps) & ins
    aux_in_steps = int((beside & is_aux).sum())
    if replay_guard.any():  # replays: their branches run on the device's other streams
        for d, s in {(int(a), int(b)) for a, b in zip(ops.device[replay_guard],
                                                       ops.stream[replay_guard])}:
            aux_in_steps += int((beside & (ops.device == d) & (ops.stream != s)
                                 & ~replay_guard).sum())
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


def ordering_verdict(res: dict) -> str:
    """`hazard` when a guarded kernel ran beside aux work or nothing orders it after aux work;
    `ok` when guarded kernels were found with neither, and the trace could tell: its guarded
    steps hold no auxiliary work at all, or their stream waits were checked; otherwise
    `unknown` (nothing guarded, no stream-wait records, or graph replays with no eager step to
    take their edges from)."""
    if res["violations"] or res.get("unordered"):
        return "hazard"
    if not res["guarded_kernels"]:
        return "unknown"
    if res.get("aux_ops_in_guarded_steps") == 0:
        return "ok"
    if res.get("graph_replay_kernels") and not res.get("reference_guarded_kernels"):
        return "unknown"
    return "ok" if res.get("sync_records") else "unknown"


def verdict_reason(res: dict) -> str:
    """One line that says why; for `unknown`, what to do to get an answer (spec item 2)."""
    v = res.get("verdict") or ordering_verdict(res)
    if v == "hazard":
        parts = []
        if res["violations"]:
            parts.append(f"{res['violations']} guarded kernel(s) ran beside auxiliary work")
        if res.get("unordered"):
            parts.append(f"{res['unordered']} guarded launch(es) not ordered after the "
                         "auxiliary work in flight by a stream wait")
        return "; ".join(parts)
    if v == "ok":
        if res.get("aux_ops_in_guarded_steps") == 0:
            return "no auxiliary work in the guarded steps"
        return (f"none of the {res['guarded_kernels']} guarded kernel(s) ran beside auxiliary "
                f"work; {res.get('ordered_checked') or 0} launch(es) with auxiliary work in "
                "flight were ordered after it by a stream wait")
    if not res["guarded_kernels"]:
        what = " or ".join(f"{k} {res[k]!r}" for k in ("guarded_regex", "guard_range") if res.get(k))
        return (f"no kernel in the steps matched {what}: check the names in the kernel table "
                "and extend the regex (--guard-kernels)")
    if not res.get("sync_records"):
        if "kineto" in (res.get("producer") or ""):
            return ("the trace has no CUDA sync events, so stream waits cannot be checked: "
                    "profile with experimental_config=torch._C._profiler._ExperimentalConfig("
                    "enable_cuda_sync_events=True) (perfwarden's torch profile pass sets it)")
        return ("the trace has no stream-wait records (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION): "
                "profile with nsys -t cuda")
    if res.get("graph_replay_kernels") and not res.get("reference_guarded_kernels"):
        return ("the guarded kernels are CUDA graph replays, which carry no stream waits: launch "
                "the same step eagerly inside eager_reference_step_<i> ranges in the same "
                "trace, or pass an eager trace with --reference")
    return "the trace cannot tell"


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
    the guarded kernels are on the device's main stream, and spec item 3 reads such a wait as
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
        # a wait belongs to the process that enqueued it (nsys leaves deviceId 0 on every
        # process's SYNCHRONIZATION rows); by device only when the process is unknown
        procs = set(ops.proc[gsel].tolist())
        waits = [w for w in trace.waits if w.proc in procs]
        if not waits:
            waits = [w for w in trace.waits if w.device == d or len(devices) == 1]
        w_stream = np.array([w.stream for w in waits], dtype=np.int64)
        w_on = np.array([w.on_stream for w in waits], dtype=np.int64)
        w_call = np.array([w.call_ns for w in waits], dtype=np.int64)
        w_rec = np.array([w.record_call_ns if w.record_call_ns >= 0 else w.call_ns
                          for w in waits], dtype=np.int64)
        w_corr = np.array([w.corr for w in waits], dtype=np.int64)
        # aux launches by (stream, step, launch time): the last one before a guarded launch
        order = asel[np.lexsort((call[asel], proj.op_step[asel], ops.stream[asel]))]
        a_stream, a_step, a_call = ops.stream[order], proj.op_step[order], call[order]
        streams = np.unique(a_stream).tolist()
        edges = {}
        for g in np.unique(ops.stream[gsel]).tolist():
            for s in streams:
                un = (w_stream == g) & (w_on < 0)
                edges[(g, s)] = (_prefix(w_call, w_rec, (w_stream == g) & (w_on == s)),
                                 _prefix(w_call, w_corr, un & (w_corr >= 0)),
                                 _prefix(w_call, w_call, un & (w_corr < 0)),
                                 _prefix(w_call, w_call, un))
        for k in gsel.tolist():
            step = int(proj.op_step[k])
            launch = int(call[k])
            if launch < 0:
                continue
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
                last, last_corr = int(a_call[j]), int(ops.corr[order[j]])
                resolved, by_corr, by_time, by_time_all = edges[(int(ops.stream[k]), s)]
                ok = _reaches(resolved, launch, last)
                if not ok and last_corr >= 0:
                    ok = _reaches(by_corr, launch, last_corr + 1) or _reaches(by_time, launch, last)
                elif not ok:
                    ok = _reaches(by_time_all, launch, last)
                if not ok:
                    missing.append(s)
            if not any_prior:
                continue
            checked += 1
            if missing:
                unordered.append({"step": step, "kernel": trace.names[int(ops.name_id[k])],
                                  "device": d, "stream": int(ops.stream[k]),
                                  "unjoined_aux_streams": missing})
    return checked, unordered


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
