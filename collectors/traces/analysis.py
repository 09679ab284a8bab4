"""Step projection, stream roles, auxiliary-lane gaps and overlap (spec/metrics.md)."""
from __future__ import annotations

import re
from typing import cast

import numpy as np

from . import intervals as iv
from . import lanes as ln
from .lanes import NS_PER_US
from .model import OP_KIND_NAMES, Trace
from .options import Options, Projection
from .roles import Roles, device_name, device_places, graph_replays, stream_roles
from .steps import family_names, resolve
from .summary import TraceSummary


def step_ranges(trace: Trace, regex: str | None) -> np.ndarray:
    """Indices of the ranges that are steps: names match, and not nested in another step range."""
    rx = re.compile(regex if regex is not None else step_regex_of(trace))
    r = trace.ranges
    idx = np.array([i for i, n in enumerate(r.names) if rx.search(n)], dtype=np.int64)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((-r.end_ns[idx], r.start_ns[idx], r.thread[idx]))]
    thr, end = r.thread[order], r.end_ns[order]
    keep = np.ones(order.size, dtype=bool)
    # a range ending no later than an earlier-starting range on its thread is nested in it
    for t in np.unique(thr):
        sel = np.flatnonzero(thr == t)
        e = end[sel]
        prev_max = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int64).min], e[:-1]]))
        keep[sel] = e > prev_max
    return order[keep]


def project(trace: Trace, regex: str | None) -> Projection:
    """Ops -> the step ranges matching `regex` (None: the trace's step family, steps.py)."""
    if regex is None:
        regex = step_regex_of(trace)
    ops, calls, r = trace.ops, trace.calls, trace.ranges
    n = len(ops)
    op_step = np.full(n, -1, dtype=np.int64)
    call_start = np.full(n, -1, dtype=np.int64)
    call_thread = np.full(n, -1, dtype=np.int64)
    steps = step_ranges(trace, regex)
    if n and len(calls):
        # join op -> launch call on (process, correlation id)
        _, proc_rank = iv.unique_inverse(np.concatenate([ops.proc, calls.proc]))
        ckey = (proc_rank[n:] << 40) | (calls.corr & ((1 << 40) - 1))
        okey = (proc_rank[:n] << 40) | (ops.corr & ((1 << 40) - 1))
        order = np.argsort(ckey, kind="stable")
        sk = ckey[order]
        pos = np.clip(np.searchsorted(sk, okey), 0, len(sk) - 1)
        hit = (sk[pos] == okey) & (ops.corr >= 0)
        ci = order[pos]
        call_start = np.where(hit, calls.start_ns[ci], -1)
        call_thread = np.where(hit, calls.thread[ci], -1)
        if steps.size:
            c_thr, c_s, c_e = calls.thread[ci], calls.start_ns[ci], calls.end_ns[ci]
            for t in np.unique(r.thread[steps]):
                st = steps[r.thread[steps] == t]
                st = st[np.argsort(r.start_ns[st], kind="stable")]
                sel = np.flatnonzero(hit & (c_thr == t))
                if sel.size == 0:
                    continue
                k = np.searchsorted(r.start_ns[st], c_s[sel], side="right") - 1
                ok = k >= 0
                kk = np.maximum(k, 0)
                ok &= c_e[sel] <= r.end_ns[st][kk]
                op_step[sel[ok]] = st[kk[ok]]
    # renumber to the ranges that kept ops, in time order
    used = iv.unique_inverse(op_step[op_step >= 0])[0]
    used = used[np.lexsort((r.start_ns[used], r.proc[used]))] if used.size else used
    remap = np.full(len(r) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    op_step = np.where(op_step >= 0, remap[op_step], -1)
    return Projection(op_step, r.start_ns[used], r.end_ns[used], r.proc[used],
                      [r.names[i] for i in used], call_start, call_thread)


def join_projections(projs: list[Projection], offsets: list[tuple[int, int, int]]
                     ) -> Projection:
    """The projection of the joined ranks (model.concat_traces) from each rank's own, all made
    with one step regex: a rank's processes and threads follow those of the ranks before it
    (`offsets`, model.rank_offsets; their keys are not negative), so its steps, in (process,
    start) order, follow theirs."""
    cat = np.concatenate
    op_step, before = [], 0
    for p in projs:
        op_step.append(np.where(p.op_step >= 0, p.op_step + before, -1))
        before += p.step_start_ns.shape[0]
    return Projection(cat(op_step), cat([p.step_start_ns for p in projs]),
                      cat([p.step_end_ns for p in projs]),
                      cat([p.step_proc + off[1] for p, off in zip(projs, offsets)]),
                      [n for p in projs for n in p.step_names],
                      cat([p.op_call_start_ns for p in projs]),
                      cat([np.where(p.op_call_thread >= 0, p.op_call_thread + off[2], -1)
                           for p, off in zip(projs, offsets)]))


def _streams(trace: Trace, proj: Projection, roles: Roles, opts: Options) -> list[dict]:
    ops = trace.ops
    ins = proj.op_step >= 0
    nsteps = proj.step_start_ns.shape[0]
    out = []
    group, ndev, dmin = ln.step_device_groups(trace, proj)
    # GPU time of each step on each device: first op start to last op end
    span_total: dict[int, float] = {}
    if ins.any():
        g = group[ins]
        u, inv = iv.unique_inverse(g)
        first = np.full(u.size, np.iinfo(np.int64).max)
        last = np.full(u.size, np.iinfo(np.int64).min)
        np.minimum.at(first, inv, ops.start_ns[ins])
        np.maximum.at(last, inv, ops.end_ns[ins])
        dev = u % ndev
        total = np.zeros(ndev, dtype=np.int64)
        np.add.at(total, dev, last - first)
        span_total = {int(d) + dmin: int(total[d]) for d in np.unique(dev)}
    places = device_places(trace)
    for d in sorted(set(roles.main) | set(roles.aux)):
        streams = sorted(({roles.main[d]} if d in roles.main else set()) | roles.aux.get(d, set()))
        for s in streams:
            sel = ins & (ops.device == d) & (ops.stream == s)
            role = "main" if roles.main.get(d) == s else "aux"
            gs, ss_, es = iv.merge(proj.op_step[sel], ops.start_ns[sel], ops.end_ns[sel])
            busy = float((es - ss_).sum())
            row = {"device": d, "rank": places[d][0], "gpu": places[d][1],
                   "device_label": device_name(places, d), "stream": s, "role": role, "ops": int(sel.sum()),
                   "busy_per_step_us": busy / nsteps / NS_PER_US if nsteps else None,
                   "busy_share": busy / span_total[d] if span_total.get(d) else None}
            if role == "main":
                row["chosen_by"] = roles.how.get(d, "")
            if role == "aux":
                _, gap = iv.gaps(gs, ss_, es)
                row.update(ln.gap_stats(gap, opts.min_gap_us))
                row["aux_idle_per_step_us"] = float(gap.sum()) / nsteps / NS_PER_US
            out.append(row)
    return out


def kernel_breakdown(trace: Trace, proj: Projection, limit: int = 200) -> list[dict]:
    """Count, total and mean duration per (name, device, stream), over the ops in steps (all ops
    when the trace has no steps), largest total first."""
    ops = trace.ops
    sel = proj.op_step >= 0
    if not sel.any():
        sel = np.ones(len(ops), dtype=bool)
    if not sel.any():
        return []
    u, inv = iv.group_rows(ops.name_id[sel].astype(np.int64), ops.device[sel], ops.stream[sel],
                           ops.kind[sel].astype(np.int64))
    dur = (ops.end_ns - ops.start_ns)[sel]
    total = np.bincount(inv, weights=dur)
    count = np.bincount(inv)
    order = np.argsort(-total, kind="stable")[:limit]
    # one row per device (spec/metrics.md, Kernel breakdown per device), named by rank: the device's
    # place among the trace's
    # devices (one file per rank, or one file holding every rank's GPU)
    places = device_places(trace)
    return [{"name": trace.names[int(u[i, 0])], "kind": OP_KIND_NAMES[int(u[i, 3])],
             "device": int(u[i, 1]), "rank": places[int(u[i, 1])][0],
             "gpu": places[int(u[i, 1])][1], "device_label": device_name(places, int(u[i, 1])),
             "stream": int(u[i, 2]), "count": int(count[i]),
             "total_us": float(total[i]) / NS_PER_US, "mean_us": float(total[i] / count[i]) / NS_PER_US}
            for i in order]


def resolve_steps(trace: Trace, opts: Options | None = None) -> Options:
    """Options with this trace's step range chosen (spec/metrics.md, Steps in real engines'
    traces)."""

    return resolve(opts or Options(), trace.ranges.names)


def step_regex_of(trace: Trace, opts: Options | None = None) -> str:
    return cast(str, resolve_steps(trace, opts).step_regex)


def analyze(trace: Trace, opts: Options | None = None, proj: Projection | None = None
            ) -> TraceSummary:
    opts = resolve_steps(trace, opts)
    regex = cast(str, opts.step_regex)
    proj = proj or project(trace, regex)
    replay = graph_replays(trace)
    roles = stream_roles(trace, proj, opts, replay)
    nsteps = int(proj.step_start_ns.shape[0])  # the steps that hold device work
    host = step_ranges(trace, regex)
    prefill = int(step_ranges(trace, opts.prefill_regex).size) if opts.prefill_regex else None
    warnings = list(trace.warnings) + roles.notes
    if host.size > nsteps:
        warnings.append(f"{host.size - nsteps} of {host.size} step ranges hold no device work"
                        + (" (a CPU trace): steps are counted from the host ranges; the device "
                           "figures have no work to measure" if len(trace.ops) == 0 else
                           ": they count as steps; the device figures are over the others"))
    if host.size == 0:
        if prefill:
            warnings.append(f"no decode steps: the trace's {prefill} {opts.step_source[6:]} "
                            "step(s) are all prefill (or mixed prefill/decode) steps")
        else:
            common = [f"{n} ({c})" for n, c in trace.range_name_counts.most_common(5)]
            looked = (f"no step range of any known family ({family_names()}); pass --step-regex"
                      if opts.step_source == "auto: none found"
                      else f"no host range matches the step regex {regex!r}")
            warnings.append(looked + (f"; most common range names: {', '.join(common)}" if common
                                      else "; the trace has no host ranges"))
    all_steps = np.ones(nsteps, dtype=bool)
    out: dict = {"source": trace.source, "producer": trace.producer,
                 "step_regex": regex, "step_source": opts.step_source,
                 "min_gap_us": opts.min_gap_us, "steps": int(host.size), "prefill_steps": prefill,
                 "graph_replay_ops": int(replay[proj.op_step >= 0].sum())}
    lanes = ln.lanes(trace, proj, roles)
    out.update(ln.lane_figures(lanes, roles, all_steps, opts.min_gap_us))
    out.update(ln.step_times(lanes, proj, all_steps))
    out["main_streams"] = [{"device": d, "stream": s} for d, s in sorted(roles.main.items())]
    out["aux_streams"] = [{"device": d, "stream": s} for d in sorted(roles.aux)
                          for s in sorted(roles.aux[d])]
    ranks: list[dict] = []
    host_proc = trace.ranges.proc[host]
    procs = np.unique(np.concatenate([host_proc, proj.step_proc]))
    if procs.size > 1:
        for p in procs.tolist():
            sel = proj.step_proc == p
            row = {"rank": len(ranks), "process": int(p), "steps": int((host_proc == p).sum())}
            row.update(ln.lane_figures(lanes, roles, sel, opts.min_gap_us))
            row.update(ln.step_times(lanes, proj, sel))
            ranks.append(row)
    out["ranks"] = ranks
    out["streams"] = _streams(trace, proj, roles, opts)
    out["kernels"] = kernel_breakdown(trace, proj, opts.kernel_limit)
    out["ops"] = len(trace.ops)
    out["warnings"] = warnings
    return cast(TraceSummary, out)


def timeline(trace: Trace, opts: Options, steps: int = 3, max_ops: int = 5000) -> dict:
    """Per-stream op intervals of the first `steps` steps (of the first process), times in us
    relative to the first step's start, for the dashboard's Gantt chart."""
    opts = resolve_steps(trace, opts)
    proj = project(trace, cast(str, opts.step_regex))
    if proj.step_start_ns.shape[0] == 0 and opts.prefill_regex:
        proj = project(trace, opts.prefill_regex)  # no decode step: show the prefill steps
    roles = stream_roles(trace, proj, opts)
    nst = proj.step_start_ns.shape[0]
    if nst == 0:
        return {"steps": [], "ops": [], "streams": []}
    first_proc = proj.step_proc[0]
    chosen = np.flatnonzero(proj.step_proc == first_proc)[:max(1, steps)]
    t0 = int(proj.step_start_ns[chosen[0]])
    ops = trace.ops
    sel = np.isin(proj.op_step, chosen)
    idx = np.flatnonzero(sel)[:max_ops]
    rows = []
    for i in idx.tolist():
        d, s = int(ops.device[i]), int(ops.stream[i])
        role = "main" if roles.main.get(d) == s else ("aux" if s in roles.aux.get(d, ()) else "other")
        rows.append({"step": int(proj.op_step[i]), "device": d, "stream": s, "role": role,
                     "name": trace.names[int(ops.name_id[i])],
                     "start_us": (int(ops.start_ns[i]) - t0) / NS_PER_US,
                     "end_us": (int(ops.end_ns[i]) - t0) / NS_PER_US})
    streams = sorted({(r["device"], r["stream"], r["role"]) for r in rows})
    return {"steps": [{"step": int(k), "name": proj.step_names[k],
                       "start_us": (int(proj.step_start_ns[k]) - t0) / NS_PER_US,
                       "end_us": (int(proj.step_end_ns[k]) - t0) / NS_PER_US} for k in chosen],
            "ops": rows,
            "streams": [{"device": d, "stream": s, "role": r} for d, s, r in streams],
            "min_gap_us": opts.min_gap_us}
