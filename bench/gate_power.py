#!/usr/bin/env python3
"""Error rates of the gate, measured by resampling real H200 noise blocks.

data/h200/noise/<mode>/ holds separate processes ("blocks") of 5 trials each: A/A blocks of the
same code and blocks with a planted slowdown of about 1% and 3%. Each resample draws a baseline of
A/A blocks and a candidate (one block, or pooled blocks) from the rest, resamples the trials inside
every chosen block with replacement, and asks the gate's statistics (service.stats.assess and
decide, the code the API runs; one metric, so no multiplicity correction) for a verdict.

Cases:
- graphs: CUDA-graph decode, run-to-run CV about 0.1% (the committed blocks as they are);
- eager: eager decode, whose processes swing by 5-27% (real noisy data);
- noisy: the graphs blocks, each resampled block scaled by its own factor drawn from
  N(1, --noisy-cv) (default 3%, the spread of the noisy baseline in issue #12).

For each case and design it prints the share of resamples called regression / pass /
inconclusive / improvement, and reads them as:
- on A/A: false-alarm rate = regression share;
- on planted slowdowns: false-pass rate = pass share; power = regression share.

    python bench/gate_power.py [--resamples 1000] [--seed 1] [--threshold 0.5]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.stats.assess import assess, decide  # noqa: E402

ALPHA = 0.05
DESIGNS = (("single run", 4, 1), ("pooled runs", 3, 2))


def blocks(mode: str) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {}
    for f in sorted((ROOT / "data" / "h200" / "noise" / mode).glob("*.json")):
        for rec in json.loads(f.read_text()):
            out.setdefault(rec["label"].split("-")[0], []).append(rec["metrics"]["tok_s"]["samples"])
    return out


def verdict(base: list[list[float]], cand: list[list[float]], threshold: float) -> str:
    a = assess(base, cand, "higher")
    return decide(a, threshold, a.p_value, ALPHA)[0]


def simulate(b: dict[str, list[list[float]]], kind: str, n_base: int, n_cand: int, rng: random.Random,
             resamples: int, threshold: float, scale_cv: float) -> dict[str, int]:
    aa = b["aa"]

    def boot(blk: list[float]) -> list[float]:
        f = rng.gauss(1.0, scale_cv) if scale_cv else 1.0
        return [f * rng.choice(blk) for _ in blk]

    counts = {"regression": 0, "pass": 0, "inconclusive": 0, "improvement": 0}
    for _ in range(resamples):
        if kind == "aa":
            chosen = rng.sample(range(len(aa)), n_base + n_cand)
            base = [boot(aa[i]) for i in chosen[:n_base]]
            cand = [boot(aa[i]) for i in chosen[n_base:]]
        else:
            base = [boot(aa[i]) for i in rng.sample(range(len(aa)), n_base)]
            cand = [boot(b[kind][i]) for i in rng.sample(range(len(b[kind])), n_cand)]
        counts[verdict(base, cand, threshold)] += 1
    return counts


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--threshold", type=float, default=0.5, help="tok_s threshold, percent")
    ap.add_argument("--noisy-cv", type=float, default=3.0, help="run-to-run CV of the noisy case, %%")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases = (("graphs", "graphs", 0.0), ("eager", "eager", 0.0),
             (f"noisy {args.noisy_cv:g}%", "graphs", args.noisy_cv / 100))
    print(f"gate error rates on resampled H200 noise blocks: {args.resamples} resamples per row, "
          f"tok_s threshold {args.threshold}%, alpha {ALPHA}\n")
    print(f"{'case':<10} {'design':<12} {'base/cand':>9} {'candidate':<9} {'regress':>8} {'pass':>7} "
          f"{'inconcl':>8} {'improve':>8}   reading")
    for name, mode, cv in cases:
        b = blocks(mode)
        for design, nb, nc in DESIGNS:
            for kind in ("aa", "plant1", "plant3"):
                c = simulate(b, kind, nb, nc, rng, args.resamples, args.threshold, cv)
                n = sum(c.values())
                share = {k: 100.0 * v / n for k, v in c.items()}
                reading = (f"false alarms {share['regression']:.1f}%" if kind == "aa" else
                           f"false passes {share['pass']:.1f}%, power {share['regression']:.1f}%")
                print(f"{name:<10} {design:<12} {f'{nb}/{nc}':>9} {kind:<9} "
                      f"{share['regression']:>7.1f}% {share['pass']:>6.1f}% "
                      f"{share['inconclusive']:>7.1f}% {share['improvement']:>7.1f}%   {reading}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
