#!/usr/bin/env python3
"""False-alarm rate and detection power of the gate, by resampling real H200 noise blocks.

data/h200/noise/<mode>/ holds separate processes ("blocks") of 5 trials each: A/A blocks of the
same code and blocks with a planted slowdown of about 1% and 3%. Each resample draws a baseline of
A/A blocks and a candidate (one block, or pooled blocks) from the rest, resamples the trials inside
every chosen block with replacement, and asks the gate's statistics (service.stats.assess, the
same code the API runs, one metric so no multiplicity correction) for a verdict.

    python bench/gate_power.py [--mode graphs|eager] [--resamples 2000] [--seed 1]

Prints, for a single candidate run and for pooled candidate runs, the share of resamples the gate
calls a regression: the false-alarm rate on A/A, the power on the planted slowdowns.
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


def blocks(mode: str) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {}
    for f in sorted((ROOT / "data" / "h200" / "noise" / mode).glob("*.json")):
        for rec in json.loads(f.read_text()):
            out.setdefault(rec["label"].split("-")[0], []).append(rec["metrics"]["tok_s"]["samples"])
    return out


def verdict(base, cand, threshold: float) -> str:
    a = assess(base, cand, "higher", False, 0.05, threshold)
    return decide(a, threshold, a.p_value, 0.05)[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="graphs", choices=["graphs", "eager"])
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--threshold", type=float, default=0.5, help="tok_s threshold, percent")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    b = blocks(args.mode)
    aa = b["aa"]
    boot = lambda blk: [rng.choice(blk) for _ in blk]  # noqa: E731
    rows = []
    for design, n_base, n_cand in (("single run", 3, 1), ("pooled runs", 3, 2)):
        for kind in ("aa", "plant1", "plant3"):
            counts = {"regression": 0, "pass": 0, "inconclusive": 0, "improvement": 0}
            for _ in range(args.resamples):
                if kind == "aa":
                    chosen = rng.sample(range(len(aa)), n_base + n_cand)
                    base = [boot(aa[i]) for i in chosen[:n_base]]
                    cand = [boot(aa[i]) for i in chosen[n_base:]]
                else:
                    base = [boot(aa[i]) for i in rng.sample(range(len(aa)), n_base)]
                    cand = [boot(b[kind][i]) for i in rng.sample(range(len(b[kind])), n_cand)]
                counts[verdict(base, cand, args.threshold)] += 1
            rows.append((design, n_base, n_cand, kind, counts))
    print(f"H200 noise blocks ({args.mode}): {len(aa)} A/A, {len(b['plant1'])} planted 1%, "
          f"{len(b['plant3'])} planted 3%; {args.resamples} resamples each; tok_s threshold "
          f"{args.threshold}%\n")
    print(f"{'design':<12} {'base/cand runs':>14} {'candidate':<10} {'regression':>11} "
          f"{'pass':>7} {'inconcl.':>9} {'improv.':>8}   meaning")
    for design, nb, nc, kind, c in rows:
        n = sum(c.values())
        meaning = "false-alarm rate" if kind == "aa" else "power"
        print(f"{design:<12} {f'{nb}/{nc}':>14} {kind:<10} {100 * c['regression'] / n:>10.1f}% "
              f"{100 * c['pass'] / n:>6.1f}% {100 * c['inconclusive'] / n:>8.1f}% "
              f"{100 * c['improvement'] / n:>7.1f}%   {meaning}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
