"""An independent, deliberately plain re-implementation of spec/metrics.md for tests: loops over
raw rows read straight from the files (no numpy, no code shared with collectors/)."""
from __future__ import annotations

import gzip
import json
import re
import sqlite3
import statistics


def kineto_rows(path):
    with gzip.open(path) if str(path).endswith(".gz") else open(path, "rb") as f:
        doc = json.load(f)
    ops, calls, ranges = [], [], []
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat = (e.get("cat") or "").lower()
        a = e.get("args") or {}
        s, d = round(e["ts"] * 1000), round(e["dur"] * 1000)
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            ops.append((s, s + d, a["device"], a["stream"], a["correlation"], 0, e["name"]))
        elif cat in ("cuda_runtime", "cuda_driver"):
            calls.append((s, s + d, (e["pid"], e["tid"]), a.get("correlation"), 0))
        elif cat == "user_annotation":
            ranges.append((s, s + d, (e["pid"], e["tid"]), e["name"], 0))
    return ops, calls, ranges


def nsys_rows(path):
    con = sqlite3.connect(path)
    names = dict(con.execute("SELECT id, value FROM StringIds"))
    ops = [(s, e, d, st, c, gp >> 24, names.get(n, "?")) for s, e, d, st, c, gp, n in con.execute(
        "SELECT start, end, deviceId, streamId, correlationId, globalPid, demangledName "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    calls = [(s, e, t, c, t >> 24) for s, e, t, c in con.execute(
        "SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")]
    ranges = []
    for s, e, t, text, tid in con.execute(
            "SELECT start, end, globalTid, text, textId FROM NVTX_EVENTS WHERE eventType IN (59, 60)"):
        ranges.append((s, e, t, text if text is not None else names.get(tid, ""), t >> 24))
    return ops, calls, ranges


def merge(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def inter(a, b):
    total = 0
    for s1, e1 in a:
        for s2, e2 in b:
            total += max(0, min(e1, e2) - max(s1, s2))
    return total


def analyze(ops, calls, ranges, regex="decode_step", min_gap_us=10.0):
    rx = re.compile(regex)
    steps = [r for r in ranges if rx.search(r[3])]
    call_by = {}
    for c in calls:
        call_by[(c[4], c[3])] = c
    op_step = {}
    for i, o in enumerate(ops):
        c = call_by.get((o[5], o[4])) if ops and isinstance(o[5], int) else None
        if c is None:
            c = next((c for c in calls if c[3] == o[4]), None)
        if c is None:
            continue
        for j, r in enumerate(steps):
            if r[2] == c[2] and r[0] <= c[0] and c[1] <= r[1]:
                op_step[i] = j
                break
    used = sorted(set(op_step.values()))
    busy = {}
    for i in op_step:
        o = ops[i]
        busy[(o[2], o[3])] = busy.get((o[2], o[3]), 0) + (o[1] - o[0])
    main = {}
    for (d, s), _busy in sorted(busy.items(), key=lambda x: (-x[1], x[0][1])):
        main.setdefault(d, s)
    aux = {(d, s) for (d, s) in busy if main[d] != s}
    n = len(used)
    res = {"steps": n}
    if not aux or not n:
        return {**res, "aux_gap_mean_us": None, "aux_gap_count": None}
    gaps, idle, busy_t, overlap = [], 0, 0, 0
    for j in used:
        for d in main:
            lane = merge([(ops[i][0], ops[i][1]) for i, s in op_step.items()
                          if s == j and (ops[i][2], ops[i][3]) in aux and ops[i][2] == d])
            mn = merge([(ops[i][0], ops[i][1]) for i, s in op_step.items()
                        if s == j and ops[i][2] == d and ops[i][3] == main[d]])
            g = [lane[k + 1][0] - lane[k][1] for k in range(len(lane) - 1)]
            gaps += g
            idle += sum(g)
            busy_t += sum(e - s for s, e in lane)
            overlap += inter(lane, mn)
    idle_gaps = sorted(x / 1000 for x in gaps if x >= min_gap_us * 1000)
    k = len(idle_gaps)
    return {**res, "aux_gap_count": k,
            "aux_gap_mean_us": statistics.fmean(idle_gaps) if k else None,
            "aux_gap_median_us": statistics.median(idle_gaps) if k else None,
            "aux_gap_p95_us": idle_gaps[min(k - 1, int(0.95 * k))] if k else None,
            "aux_bubble_count": len(gaps) - k,
            "aux_idle_per_step_us": idle / n / 1000, "aux_busy_per_step_us": busy_t / n / 1000,
            "aux_main_overlap_us_per_step": overlap / n / 1000}
