#!/usr/bin/env python3
"""The alerts' rule (service.stats.history.change_points, as the full recompute and every
incremental evaluation run it) on real H200 run noise with bimodal clocks and outliers
(bench/gate_noise.py's noise: real A/A residuals scaled to --sd, a slow clock mode, outlier
processes), histories of --runs runs, threshold 0.5%, the change at the middle run.

For each case, over --histories histories: the share of histories with an alert (a worse
change point of the final recompute), alerts per history, the share of histories where an
alert was ever delivered (what an on-call engineer saw), the delay (runs after the change
until the alert is first delivered, recomputing after every run) and the share of delivered
alerts the final recompute no longer holds (none within 3 runs, same direction: withdrawn).

    python bench/alert_noise.py [--histories 100] [--seed 1] [--confirm 3] [--newest-alpha 0.001]
"""
from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gate_noise import Noise  # noqa: E402
from service.stats import history as hist  # noqa: E402
from service.stats.history import ChangePoint, change_points  # noqa: E402

THRESHOLD = 0.5
NEAR = 3  # an alert within this many runs of a change point stands for it (alerts/evaluation.py)


def step(pct: float) -> Callable[[int, int], float]:
    return lambda i, n: 1 + pct / 100 if i >= n // 2 else 1.0


CASES: dict[str, Callable[[int, int], float]] = {
    "A/A, 20% slow clock": lambda i, n: 1.0,
    "seasonal +-0.5% (period 24 runs)": lambda i, n: 1 + 0.005 * math.sin(2 * math.pi * i / 24),
    "step -0.4%": step(-0.4),
    "step -0.45%": step(-0.45),
    "step -1%": step(-1.0),
    "step -3%": step(-3.0),
    "drift -0.05%/run for 60 runs": lambda i, n: 1 - 0.0005 * min(max(i - n // 2, 0), 60),
    "fix then regress (-3%, +3%, -3%)": lambda i, n: 0.97 if n // 4 <= i < n // 2 or
    i >= 3 * n // 4 else 1.0,
    "blip (2 runs -5%)": lambda i, n: 0.95 if n // 2 <= i < n // 2 + 2 else 1.0,
}


def history(nz: Noise, shape: Callable[[int, int], float], n: int) -> list[float]:
    return [statistics.fmean(nz.run(shape(i, n))) for i in range(n)]


def alerting(values: list[float]) -> list[ChangePoint]:
    """The change points that raise an alert (service/alerts/evaluation.py, judge)."""
    return [c for c in change_points(values, THRESHOLD, direction="higher") if not c.continues]


def delivered(values: list[float], start: int) -> list[tuple[int, int]]:
    """(change point index, run count when first delivered), recomputing after every run."""
    out: list[tuple[int, int]] = []
    for k in range(start, len(values) + 1):
        for c in alerting(values[:k]):
            if not any(abs(c.index - i) <= NEAR for i, _ in out):
                out.append((c.index, k))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histories", type=int, default=100)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sd", type=float, default=0.12)
    ap.add_argument("--slow", type=float, default=0.2)
    ap.add_argument("--confirm", type=int, default=hist.CONFIRM_RUNS,
                    help="runs the newest segment needs before it is judged (the rule's "
                         "CONFIRM_RUNS; other values show what it trades)")
    ap.add_argument("--newest-alpha", type=float, default=hist.NEWEST_ALPHA,
                    help="the level the newest segment is judged at (the rule's NEWEST_ALPHA; "
                         "other values show what it trades)")
    args = ap.parse_args()
    hist.CONFIRM_RUNS = args.confirm
    hist.NEWEST_ALPHA = args.newest_alpha
    nz = Noise(random.Random(args.seed), argparse.Namespace(
        sd=args.sd, mode_gap=0.3, slow=args.slow, outlier=0.02, outlier_pct=3.0))
    n = args.runs
    print(f"{args.histories} histories of {n} runs, threshold {THRESHOLD}%, run sd {args.sd}%, "
          f"slow clock -0.3% in {100 * args.slow:g}% of runs, 2% outlier processes at -3%; "
          f"the newest segment judged from {args.confirm} runs at {args.newest_alpha:g}")
    for name, shape in CASES.items():
        alerts, with_alert, delays, sent, gone, reached = 0, 0, [], 0, 0, 0
        for _ in range(args.histories):
            values = history(nz, shape, n)
            final = [c.index for c in alerting(values)]
            alerts += len(final)
            with_alert += bool(final)
            first = delivered(values, 12)
            reached += bool(first)
            for idx, at in first:
                sent += 1
                gone += not any(abs(idx - f) <= NEAR for f in final)
                if idx >= n // 4:
                    delays.append(at - idx)
        delay = f"{statistics.median(delays):g} (max {max(delays)})" if delays else "-"
        print(f"  {name:<34} histories with an alert {100 * with_alert / args.histories:5.1f}%"
              f"  alerts/history {alerts / args.histories:5.2f}  delivered in "
              f"{100 * reached / args.histories:5.1f}% of histories  delay runs {delay:<12}"
              f"  delivered {sent}, withdrawn {100 * gone / sent if sent else 0:.1f}%")


if __name__ == "__main__":
    main()
