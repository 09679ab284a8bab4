"""Readable tables for `perfwarden analyze` (the --json output carries the same numbers)."""
from __future__ import annotations


def _f(v, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def print_analysis(s: dict) -> None:
    pre = s.get("prefill_steps")
    print(f"trace: {s['source']} ({s['producer']}), steps: {s['steps']}"
          + (f" decode, {pre} prefill" if pre is not None else "")
          + f" ({s.get('step_source') or 'regex'}: {s['step_regex']!r}), ops: {s['ops']:,}")
    print(f"step GPU time us: mean {_f(s['step_gpu_time_us_mean'])}, median "
          f"{_f(s['step_gpu_time_us_median'])}, p95 {_f(s['step_gpu_time_us_p95'])}")
    print(f"aux idle gaps (>= {s['min_gap_us']:g} us): {_f(s['aux_gap_count'])}, mean "
          f"{_f(s['aux_gap_mean_us'])} us, median {_f(s['aux_gap_median_us'])} us, p95 "
          f"{_f(s['aux_gap_p95_us'])} us; launch bubbles: {_f(s['aux_bubble_count'])}")
    print(f"per step: aux idle {_f(s['aux_idle_per_step_us'])} us, aux busy "
          f"{_f(s['aux_busy_per_step_us'])} us, aux/main overlap "
          f"{_f(s['aux_main_overlap_us_per_step'])} us")
    if s["streams"]:
        print("\n  rank  GPU stream role     ops  busy/step us  share  idle gaps  gap mean us")
        for r in s["streams"]:
            print(f"  {r.get('rank', r['device']):>4} {r.get('gpu', r['device']):>4} "
                  f"{r['stream']:>6} {r['role']:<5} {r['ops']:>7,} "
                  f"{_f(r['busy_per_step_us']):>13} {_f(r['busy_share'], 3):>6} "
                  f"{_f(r.get('aux_gap_count')):>10} {_f(r.get('aux_gap_mean_us')):>12}")
    if s["ranks"]:
        print("\n  rank steps  gap mean us  idle/step us  overlap/step us  file")
        for r in s["ranks"]:
            print(f"  {r['rank']:>4} {r['steps']:>5} {_f(r['aux_gap_mean_us']):>12} "
                  f"{_f(r['aux_idle_per_step_us']):>13} {_f(r['aux_main_overlap_us_per_step']):>16}"
                  f"  {r.get('file', '')}")
    if s["kernels"]:
        print("\n  top kernels                                               rank  stream  count"
              "     total us   mean us")
        for k in s["kernels"][:15]:
            print(f"  {_short(k['name'], 56):<56} {k.get('rank', k['device']):>5} "
                  f"{k['stream']:>7} {k['count']:>6,} {_f(k['total_us']):>12} "
                  f"{_f(k['mean_us'], 2):>9}")
    o = s.get("ordering")
    if o:
        what = " and ".join(x for x in (
            f"kernels {o['guarded_regex']!r}" if o.get("guarded_regex") else "",
            f"range {o['guard_range']!r}" if o.get("guard_range") else "") if x)
        print(f"\nordering check ({what}): {o['verdict'].upper()}: {o['guarded_kernels']} guarded "
              f"kernels ({o.get('graph_replay_kernels', 0)} in graph replays), "
              f"{o['violations']} ran beside aux work"
              + (f", {o['unordered']} not ordered after aux work by a stream wait "
                 f"({o['ordered_checked']} checked)"
                 if o["sync_records"] else ", no synchronization records in the trace"))
        if o.get("reason"):
            print(f"  {o['reason']}")
        ref = o.get("reference")
        if ref:
            print(f"  graph replays matched through {ref['steps']} {ref['source']}: "
                  f"{len(ref['guarded_names'])} kernel name(s) of the range"
                  + (f", {len(ref['ambiguous_names'])} ambiguous (also launched outside it)"
                     if ref["ambiguous_names"] else ""))
        for v in [v for v in o["violation_list"] if v][:10]:
            print(f"  step {v['step']}: {_short(v['kernel'], 50)} overlapped {v['overlap_us']:.1f} us")
        for u in o["unordered_list"][:5]:
            print(f"  step {u['step']}: {_short(u['kernel'], 50)} launched with aux stream(s) "
                  f"{u['unjoined_aux_streams']} not joined" + (f" ({u['from']})" if u.get("from") else ""))


def print_diff(d: dict) -> None:
    print(f"base: {d['base']['source']} ({d['base']['steps']} steps) -> candidate: "
          f"{d['candidate']['source']} ({d['candidate']['steps']} steps)")
    print("\n  metric                          base    candidate      delta")
    for g in d["gaps"]:
        pct = f" ({g['delta_pct']:+.1f}%)" if g["delta_pct"] is not None else ""
        print(f"  {g['metric']:<28} {_f(g['base']):>8} {_f(g['candidate']):>12} "
              f"{_f(g['delta']):>10}{pct}")
    print("\n  kernel (per step)                                        base us  cand us   delta")
    # the diff's own shortening keeps the part where two kernel names differ
    for k in d["kernels"][:15]:
        print(f"  {k.get('shown') or _short(k['name'], 55):<55} {_f(k['base_per_step_us']):>8} "
              f"{_f(k['candidate_per_step_us']):>8} {k['delta_per_step_us']:>+8.1f} {k['status']}")


def print_verdict(g: dict) -> None:
    """The gate's answer (POST /api/v1/gate) as a table, on a node without the service."""
    print(f"verdict: {g['verdict'].upper()}  ({g.get('benchmark')}: runs "
          f"{g.get('candidate_run_ids')} vs baseline {g.get('baseline')})")
    print(f"\n  {'metric':<22} {'change':>9} {'interval':>19} {'thr':>6}  verdict")
    for m in g.get("metrics", []):
        lo, hi = m.get("ci_low_pct"), m.get("ci_high_pct")
        ci = "-" if lo is None or hi is None else f"{lo:+.2f}..{hi:+.2f}%"
        delta = "-" if m.get("delta_pct") is None else f"{m['delta_pct']:+.2f}%"
        print(f"  {m['name']:<22} {delta:>9} {ci:>19} {m['threshold_pct']:>5g}%  {m['verdict']}")
    for m in g.get("metrics", []):
        if m["verdict"] != "pass" and m.get("reason"):
            print(f"  - {m['name']}: {m['reason']}")
