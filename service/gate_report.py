"""Plain-text tables for `perfwarden gate` and `perfwarden noise`, from the typed results."""
from __future__ import annotations

from .format import interval, level_pct, num, pct, series_label
from .schemas import GateOut, NoiseOut


def print_gate(r: GateOut) -> None:
    vary = f"; varied: {', '.join(r.vary)}" if r.vary else ""
    level = r.alpha / r.looks
    print(f"verdict: {r.verdict.upper()}  ({r.benchmark}: runs {r.candidate_run_ids} vs "
          f"baseline {r.baseline} = runs {r.baseline_run_ids}; {r.correction}{vary}; alpha "
          f"{r.alpha:g}" + (f" over {r.looks} looks" if r.looks > 1 else "") + ")")
    # the series label is never cut: it gets its own line above each metric row
    print(f"\n  {'metric':<22} {'base mean':>12} {'cand mean':>12} {'change':>9} "
          f"{level_pct(level) + ' CI':>17} {'bound':>8} {'thr':>6}  verdict")
    last = None
    for m in r.metrics:
        label = series_label(m.series)
        if label != last:
            print(f"  [{label}]")
            last = label
        ci = "-" if m.method == "exact" else interval(m.ci_low_pct, m.ci_high_pct)
        bound = "-" if m.method == "exact" else pct(m.bound_pct)
        name = m.name if m.role == "gate" else f"{m.name} (evidence)"
        print(f"  {name:<22} {num(m.baseline.mean):>12} {num(m.candidate.mean):>12} "
              f"{pct(m.delta_pct):>9} {ci:>17} {bound:>8} {m.threshold_pct:>5g}%  {m.verdict}")
    for m in r.metrics:
        if m.verdict != "pass" and m.role == "gate":
            print(f"  - {m.name} [{series_label(m.series)}]: {m.reason}")
        if m.spread_from == "history":
            print(f"  - {m.name} [{series_label(m.series)}]: run-to-run spread from the series' "
                  f"history ({m.spread_runs} runs)")
        if m.spread_from == "candidate":
            print(f"  - {m.name} [{series_label(m.series)}]: run-to-run spread from the candidate's "
                  f"{m.spread_runs} runs (wider than the series' history)")


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
