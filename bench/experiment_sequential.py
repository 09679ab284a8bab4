#!/usr/bin/env python3
"""`perfwarden experiment --until-decided`: error rates of the sequential rule, by simulation on
resampled H200 noise.

Each simulated experiment runs blocks of one baseline and one candidate process. A process is
a resampled block of data/h200/noise/graphs (its 5 trials drawn with replacement from one real
process), A/A for the baseline and for an A/A candidate, a planted ~1% slowdown for the planted
candidate; every block also gets a machine drift factor common to both arms (N(1, --drift-cv)),
which the blocked analysis must cancel. The experiment is looked at after --pairs blocks and
after every block from there up to --max-pairs, and stops at the first look that is not
inconclusive. Each look tests at alpha / looks (service/stats/blocked.look_alpha); for
comparison, the same experiments judged at the nominal alpha on every look.

    python bench/experiment_sequential.py [--experiments 1000] [--pairs 3] [--max-pairs 10]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gate_power import blocks  # noqa: E402
from service.stats.assess import decide  # noqa: E402
from service.stats.blocked import assess_blocks, look_alpha  # noqa: E402

ALPHA = 0.05


def one(b: dict[str, list[list[float]]], kind: str, rng: random.Random, pairs: int,
        max_pairs: int, drift_cv: float, threshold: float, corrected: bool) -> tuple[str, int]:
    looks = max_pairs - pairs + 1
    level = look_alpha(ALPHA, looks) if corrected else ALPHA
    done: list[tuple[list[float], list[float]]] = []

    def process(pool: list[list[float]], drift: float) -> list[float]:
        blk = rng.choice(pool)
        return [drift * rng.choice(blk) for _ in blk]

    for n in range(1, max_pairs + 1):
        drift = rng.gauss(1.0, drift_cv)
        done.append((process(b["aa"], drift), process(b[kind], drift)))
        if n < pairs:
            continue
        a = assess_blocks(done, "higher", level)
        verdict, _ = decide(a, threshold, a.p_value, level)
        if verdict != "inconclusive":
            return verdict, n
    return "inconclusive", max_pairs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--experiments", type=int, default=1000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=10)
    ap.add_argument("--drift-cv", type=float, default=0.5, help="machine drift per block, %%")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"sequential experiments on resampled H200 blocks (M=1): {args.experiments} each; first "
          f"look after {args.pairs} blocks, at most {args.max_pairs}; drift {args.drift_cv}% per "
          f"block; tok_s threshold {args.threshold}%\n")
    print(f"{'noise':<7} {'rule':<22} {'candidate':<9} {'regress':>8} {'pass':>7} {'inconcl':>8} "
          f"{'improve':>8} {'mean blocks':>12}   reading")
    for mode in ("graphs", "eager"):
        b = blocks(mode)
        for corrected in (True, False):
            rows(b, mode, corrected, args)
    return 0


def rows(b: dict[str, list[list[float]]], mode: str, corrected: bool, args) -> None:  # noqa: ANN001
    if True:
        rule = "alpha/looks each look" if corrected else "alpha on every look"
        for kind in ("aa", "plant1"):
            rng = random.Random(args.seed)
            counts = {"regression": 0, "pass": 0, "inconclusive": 0, "improvement": 0}
            used = 0
            for _ in range(args.experiments):
                v, n = one(b, kind, rng, args.pairs, args.max_pairs, args.drift_cv / 100,
                           args.threshold, corrected)
                counts[v] += 1
                used += n
            share = {k: 100.0 * v / args.experiments for k, v in counts.items()}
            reading = (f"false alarms {share['regression']:.1f}%" if kind == "aa" else
                       f"decided {100 - share['inconclusive']:.1f}%, false passes "
                       f"{share['pass']:.1f}%")
            print(f"{mode:<7} {rule:<22} {kind:<9} {share['regression']:>7.1f}% {share['pass']:>6.1f}% "
                  f"{share['inconclusive']:>7.1f}% {share['improvement']:>7.1f}% "
                  f"{used / args.experiments:>12.2f}   {reading}")


if __name__ == "__main__":
    sys.exit(main())
