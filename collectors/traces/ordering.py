"""The ordering check: main-stream kernels that must never run while auxiliary work runs.

The seed's hazard: a resident-grid (persistent) kernel can deadlock when submitted while
auxiliary-stream work holds SMs its grid-wide barrier needs. Observed overlap is one signal; the
other is whether anything *orders* the kernel after the auxiliary work (a stream-wait edge): a
kernel that merely happened not to overlap in this trace is still a hazard when nothing orders it.
"""
from __future__ import annotations

import re

import numpy as np

from . import intervals as iv
from .analysis import NS_PER_US, Options, Projection, Roles, project, stream_roles
from .model import Trace


def check_ordering(trace: Trace, guarded_regex: str, opts: Options | None = None,
                   proj: Projection | None = None, roles: Roles | None = None,
                   limit: int = 100) -> dict:
    opts = opts or Options()
    proj = proj or project(trace, opts.step_regex)
    roles = roles or stream_roles(trace, proj, opts)
    rx = re.compile(guarded_regex)
    ops = trace.ops
    name_hit = np.array([bool(rx.search(n)) for n in trace.names], dtype=bool)
    ins = proj.op_step >= 0
    on_main = np.zeros(len(ops), dtype=bool)
    is_aux = np.zeros(len(ops), dtype=bool)
    for d, s in roles.main.items():
        on_main |= (ops.device == d) & (ops.stream == s)
    for d, ss in roles.aux.items():
        if ss:
            is_aux |= (ops.device == d) & np.isin(ops.stream, list(ss))
    guarded = np.flatnonzero(ins & on_main & name_hit[ops.name_id] if len(ops) else ins)
    corr_count: dict[tuple[int, int], int] = {}
    if guarded.size:
        keys, counts = np.unique(np.stack([ops.proc, ops.corr], axis=1), axis=0, return_counts=True)
        corr_count = {(int(a), int(b)): int(c) for (a, b), c in zip(keys.tolist(), counts.tolist())}
    violations, unordered = [], []
    checked_edges = 0
    for d in sorted(roles.main):
        gsel = guarded[ops.device[guarded] == d]
        if gsel.size == 0:
            continue
        asel = np.flatnonzero(is_aux & (ops.device == d))
        order = asel[np.argsort(ops.start_ns[asel], kind="stable")]
        _, ms, me = iv.merge(np.zeros(order.size, np.int64), ops.start_ns[order], ops.end_ns[order])
        ks, ke = ops.start_ns[gsel], ops.end_ns[gsel]
        overlap = iv.covered_before(ms, me, ke) - iv.covered_before(ms, me, ks)
        waits = [w for w in trace.waits if w.device == d or len(roles.main) == 1]
        for j, k in enumerate(gsel.tolist()):
            step = int(proj.op_step[k])
            name = trace.names[int(ops.name_id[k])]
            if overlap[j] > 0:
                lo = np.searchsorted(ops.start_ns[order], ops.end_ns[k], side="left")
                cands = order[:lo]
                cands = cands[ops.end_ns[cands] > ops.start_ns[k]][:3]
                violations.append({"step": step, "kernel": name, "device": d,
                                   "stream": int(ops.stream[k]),
                                   "overlap_us": float(overlap[j]) / NS_PER_US,
                                   "aux_kernels": [trace.names[int(ops.name_id[c])] for c in cands]})
            if not trace.has_sync_records:
                continue
            launch = int(proj.op_call_start_ns[k])
            graph = corr_count.get((int(ops.proc[k]), int(ops.corr[k])), 1) > 1
            if launch < 0 or graph:
                continue
            prior = asel[(proj.op_step[asel] == step) & (proj.op_call_start_ns[asel] >= 0)
                         & (proj.op_call_start_ns[asel] < launch)]
            if prior.size == 0:
                continue
            checked_edges += 1
            missing = []
            for s in np.unique(ops.stream[prior]).tolist():
                last = int(proj.op_call_start_ns[prior][ops.stream[prior] == s].max())
                ok = any(w.stream == int(ops.stream[k]) and w.on_stream == s
                         and last <= (w.record_call_ns if w.record_call_ns >= 0 else w.call_ns)
                         and 0 <= w.call_ns <= launch for w in waits)
                if not ok:
                    missing.append(s)
            if missing:
                unordered.append({"step": step, "kernel": name, "device": d,
                                  "stream": int(ops.stream[k]), "unjoined_aux_streams": missing})
    return {"guarded_regex": guarded_regex, "guarded_kernels": int(guarded.size),
            "violations": len(violations), "violation_list": violations[:limit],
            "sync_records": trace.has_sync_records,
            "ordered_checked": checked_edges if trace.has_sync_records else None,
            "unordered": len(unordered) if trace.has_sync_records else None,
            "unordered_list": unordered[:limit]}
