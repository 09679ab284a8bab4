"""Plain-text tables for `perfwarden gate` and `perfwarden noise`."""
from __future__ import annotations


def _num(v, d=2) -> str:
    return "-" if v is None else f"{v:,.{d}f}"


def _pct(v) -> str:
    return "-" if v is None else f"{v:+.2f}%"


def series_label(series: dict) -> str:
    keys = ("batch_size", "tp", "shared_experts", "cuda_graphs", "concurrency", "gpu")
    parts = [f"{k}={series[k]}" for k in keys if k in series and series[k] not in (None, "")]
    return " ".join(parts) or "-"


def print_gate(r: dict) -> None:
    print(f"verdict: {r['verdict'].upper()}  ({r['benchmark']}: runs {r['candidate_run_ids']} vs "
          f"baseline {r['baseline']} = runs {r['baseline_run_ids']}; {r['correction']})")
    print(f"\n  {'metric':<20} {'series':<44} {'base median':>12} {'cand median':>12} "
          f"{'change':>9} {'95% CI':>19} {'thr':>6}  verdict")
    for m in r["metrics"]:
        ci = "-" if m["ci_low_pct"] is None else f"{m['ci_low_pct']:+.2f}..{m['ci_high_pct']:+.2f}%"
        print(f"  {m['name']:<20} {series_label(m['series'])[:44]:<44} "
              f"{_num(m['baseline']['median']):>12} {_num(m['candidate']['median']):>12} "
              f"{_pct(m['delta_pct']):>9} {ci:>19} {m['threshold_pct']:>5g}%  {m['verdict']}")
    for m in r["metrics"]:
        if m["verdict"] != "pass":
            print(f"  - {m['name']} [{series_label(m['series'])}]: {m['reason']}")


def print_noise(benchmark: str, metric: str, rows: list[dict]) -> None:
    print(f"noise of {benchmark} / {metric}")
    print(f"\n  {'series':<44} {'runs':>5} {'trials':>6} {'run-to-run CV':>14} {'trial CV':>9} "
          f"{'block CV':>9} {'detectable (1 run)':>19} {'(pooled)':>9}")
    for r in rows:
        print(f"  {series_label({**r['config'], 'gpu': r['gpu']})[:44]:<44} {r['runs']:>5} "
              f"{r['trials_per_run']:>6} {_num(r['run_to_run_cv_pct'], 3):>13}% "
              f"{_num(r['trial_cv_pct'], 3):>8}% {_num(r['block_cv_pct'], 3):>8}% "
              f"{_num(r['min_detectable_pct'], 2):>18}% {_num(r['min_detectable_pct_pooled'], 2):>8}%")
