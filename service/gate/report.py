"""Plain-text tables for `perfwarden gate` and `perfwarden noise`, from the typed results
(the gate's answer through its one view, gate/view.py)."""
from __future__ import annotations

from ..format import interval, num, pct, series_label
from ..history.schemas import NoiseOut
from .schemas import GateOut
from .view import view


def print_gate(r: GateOut) -> None:
    v = view(r)
    vary = f"; varied: {', '.join(r.vary)}" if r.vary else ""
    print(f"verdict: {v.word}  ({r.benchmark}: runs {r.candidate_run_ids} vs "
          f"baseline {r.baseline} = runs {r.baseline_run_ids}; {r.correction}{vary}; {v.alpha})"
          + (f"; {v.unknown}" if v.unknown else ""))
    # the series label is never cut: it gets its own line above each metric row
    print(f"\n  {'metric':<22} {'base mean':>12} {'cand mean':>12} {'change':>9} "
          f"{v.level + ' CI':>17} {'bound':>8} {'thr':>6}  verdict")
    last = None
    for row in v.rows:
        m = row.metric
        if row.series != last:
            print(f"  [{row.series}]")
            last = row.series
        one_run = min(m.baseline.runs, m.candidate.runs) == 1 and m.ci_low_pct is None
        ci = "-" if row.exact else "n=1: no interval" if one_run else \
            interval(m.ci_low_pct, m.ci_high_pct)
        bound = "-" if row.exact else pct(m.bound_pct)
        name = f"{m.name} (evidence)" if row.evidence_only else m.name
        print(f"  {name:<22} {num(m.baseline.mean):>12} {num(m.candidate.mean):>12} "
              f"{pct(m.delta_pct):>9} {ci:>17} {bound:>8} {m.threshold_pct:>5g}%  {m.verdict}"
              + (" (muted)" if m.muted else ""))
    for row in v.rows:
        for note in (row.reason, row.spread):
            if note is not None:
                print(f"  - {row.metric.name} [{row.series}]: {note}")
        if row.evidence:
            print(f"  evidence [{row.series}]: {row.evidence.text(code='')}")
    if r.cause is not None:
        print(f"cause: {r.cause.line}")
    for c in r.curations:
        print(f"curation: {c.line}")


def print_noise(r: NoiseOut) -> None:
    scope = f"baseline {r.baseline}" if r.baseline else f"branch {r.branch}"
    print(f"noise of {r.benchmark} / {r.metric} ({scope})")
    print(f"\n  {'runs':>5} {'trials':>6} {'run-to-run CV':>14} {'trial CV':>9} {'block CV':>9} "
          f"{'detectable (1 run)':>19} {'(pooled)':>9}  series")
    for s in r.series:
        print(f"  {s.runs:>5} {s.trials_per_run:>6} {num(s.run_to_run_cv_pct, 3):>13}% "
              f"{num(s.trial_cv_pct, 3):>8}% {num(s.block_cv_pct, 3):>8}% "
              f"{num(s.min_detectable_pct, 2):>18}% {num(s.min_detectable_pct_pooled, 2):>8}%  "
              f"{series_label({**s.config, 'gpu': s.gpu})}")
