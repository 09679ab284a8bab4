#!/usr/bin/env python3
"""Error rates of the gate, measured by resampling real H200 noise blocks (spec/api.md).

data/h200/noise/<mode>/ holds separate processes ("blocks") of 5 trials each: A/A blocks of the
same code and blocks with a planted slowdown of about 1% and 3%. A resampled run is one block,
chosen at random, with its trials resampled with replacement. The statistics are the ones the
API runs (service.stats: assess/decide for the gate, assess_blocks for experiments,
change_points for alerts); one metric, so no multiplicity correction.

Cases:
- graphs: CUDA-graph decode, run-to-run CV about 0.1% (the committed blocks as they are);
- eager: eager decode, whose processes swing by 5-27% (real noisy data);
- noisy: the graphs blocks, each resampled block scaled by its own factor drawn from
  N(1, --noisy-cv) (default 3%, a noisy CPU baseline).

Sections:
1. gate designs: baseline runs / candidate runs, with and without a history of --history runs
   of the series (spec/api.md, Few baseline runs: used only when the baseline has fewer than 3
   runs). A/A: false-alarm
   rate = regression share; planted slowdowns: false-pass rate = pass share, power =
   regression share.
2. the staircase (spec/api.md, Change points add up): five -0.4% steps of --per-step runs each, and
   a flat A/A history of
   the same length: how many alerts (worse-direction change points) each draw raises.
3. alpha and looks (spec/api.md, One experiment one answer): A/A and planted experiments of --pairs
   blocks, --until-decided up
   to --max-pairs; the verdict at the stop judged at alpha/looks (what every asker does now) and
   at full alpha (what the PR comment and the page did before).
4. near the threshold: true changes of -0.3% to -1% against the --threshold, --near-runs runs
   a side whose run means spread --near-cv run to run (5 trials each), judged by
   service.stats.gate.judge; how often each candidate rule for `regression` is met:
   (a) the estimate past the threshold and significant against no change (adjusted p < alpha);
   (b) the one-sided 1-alpha bound on the better side past the threshold (the whole one-sided
       interval past it), with the adjusted p < alpha;
   (c) the one-sided 1-alpha bound on the worse side past the threshold;
   and the share the gate calls `regression`.

    python bench/gate_power.py [--resamples 1000] [--seed 1] [--threshold 0.5] [--only 4]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.stats.assess import assess, decide  # noqa: E402
from service.stats.blocked import assess_blocks, look_alpha  # noqa: E402
from service.stats.gate import Comparison, MetricResult, judge  # noqa: E402
from service.stats.history import change_points  # noqa: E402

ALPHA = 0.05
# (name, baseline runs, candidate runs, with history)
DESIGNS = (("4/1", 4, 1, False), ("3/2", 3, 2, False), ("2/2", 2, 2, False),
           ("2/2 +hist", 2, 2, True), ("1/2", 1, 2, False), ("1/2 +hist", 1, 2, True),
           ("1/1", 1, 1, False), ("1/1 +hist", 1, 1, True))
KINDS = ("aa", "plant1", "plant3")


def blocks(mode: str) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {}
    for f in sorted((ROOT / "data" / "h200" / "noise" / mode).glob("*.json")):
        for rec in json.loads(f.read_text()):
            out.setdefault(rec["label"].split("-")[0], []).append(rec["metrics"]["tok_s"]["samples"])
    return out


def sampler(rng: random.Random, scale_cv: float) -> Callable[[list[float]], list[float]]:
    def boot(blk: list[float]) -> list[float]:
        f = rng.gauss(1.0, scale_cv) if scale_cv else 1.0
        return [f * rng.choice(blk) for _ in blk]
    return boot


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def gate_row(b: dict[str, list[list[float]]], kind: str, nb: int, nc: int, hist: int,
             rng: random.Random, resamples: int, threshold: float, cv: float) -> dict[str, int]:
    aa, boot = b["aa"], sampler(rng, cv)
    counts = {"regression": 0, "pass": 0, "inconclusive": 0, "improvement": 0}
    for _ in range(resamples):
        if kind == "aa":  # the baseline and the candidate are different processes
            chosen = rng.sample(range(len(aa)), nb + nc) if nb + nc <= len(aa) else \
                [rng.randrange(len(aa)) for _ in range(nb + nc)]
            base = [boot(aa[i]) for i in chosen[:nb]]
            cand = [boot(aa[i]) for i in chosen[nb:]]
        else:
            base = [boot(aa[i]) for i in rng.sample(range(len(aa)), nb)]
            cand = [boot(b[kind][i]) for i in rng.sample(range(len(b[kind])), nc)]
        history = [mean(boot(rng.choice(aa))) for _ in range(hist)]
        a = assess(base, cand, "higher", alpha=ALPHA, history=history)
        counts[decide(a, threshold, a.p_value, ALPHA)[0]] += 1
    return counts


def staircase_row(b: dict[str, list[list[float]]], steps: int, per_step: int, threshold: float,
                  rng: random.Random, resamples: int, cv: float) -> dict[str, int]:
    aa, boot = b["aa"], sampler(rng, cv)
    counts = {"0": 0, "1": 0, "2+": 0}
    for _ in range(resamples):
        values = [mean(boot(rng.choice(aa))) * (1 - 0.004) ** (i // per_step)
                  for i in range(6 * per_step)] if steps else \
            [mean(boot(rng.choice(aa))) for _ in range(6 * per_step)]
        n = len(change_points(values, threshold, direction="higher"))
        counts["0" if n == 0 else "1" if n == 1 else "2+"] += 1
    return counts


def looks_row(b: dict[str, list[list[float]]], kind: str, pairs: int, max_pairs: int,
              threshold: float, rng: random.Random, resamples: int, cv: float
              ) -> tuple[dict[str, int], dict[str, int]]:
    """Sequential experiments: stop at the first decided look (at alpha/looks); the final
    verdict judged at alpha/looks and, as the earlier rule did, at full alpha."""
    aa, boot = b["aa"], sampler(rng, cv)
    looks = max_pairs - pairs + 1
    level = look_alpha(ALPHA, looks)
    at_level = {"regression": 0, "pass": 0, "inconclusive": 0, "improvement": 0}
    at_full = dict(at_level)
    for _ in range(resamples):
        blks: list[tuple[list[float], list[float]]] = []
        verdict_level = "inconclusive"
        for n in range(max_pairs):
            blks.append((boot(rng.choice(aa)), boot(rng.choice(b[kind]))))
            if n + 1 < pairs:
                continue
            a = assess_blocks(blks, "higher", level)
            verdict_level = decide(a, threshold, a.p_value, level)[0]
            if verdict_level != "inconclusive":
                break
        full = assess_blocks(blks, "higher", ALPHA)
        at_level[verdict_level] += 1
        at_full[decide(full, threshold, full.p_value, ALPHA)[0]] += 1
    return at_level, at_full


NEAR_CHANGES = (-0.3, -0.4, -0.45, -0.5, -0.6, -1.0)
NEAR_RULES = ("a", "b", "c", "gate")


def near_rules(r: MetricResult, threshold: float) -> dict[str, bool]:
    """Which candidate rules for `regression` (higher is better) one gate result meets."""
    a = r.assessment
    assert a is not None and a.delta_pct is not None and a.bound_pct is not None
    assert a.better_bound_pct is not None
    significant = r.p_adjusted is not None and r.p_adjusted < ALPHA
    return {"a": a.delta_pct < -threshold and significant,
            "b": a.better_bound_pct < -threshold and significant,
            "c": a.bound_pct < -threshold,
            "gate": r.verdict == "regression"}


def near_row(change_pct: float, runs: int, cv: float, threshold: float, rng: random.Random,
             resamples: int) -> dict[str, int]:
    """Draws of `runs` vs `runs` runs, run means N(level, cv) with 5 trials of 0.1% around
    each, the candidate's level moved by `change_pct`: how often each rule is met."""
    counts = dict.fromkeys(NEAR_RULES, 0)

    def run(level: float) -> list[float]:
        m = level * rng.gauss(1.0, cv)
        return [m * rng.gauss(1.0, 0.001) for _ in range(5)]

    for _ in range(resamples):
        c = Comparison("tok_s", "tok/s", "higher", threshold, False, {}, 1,
                       [run(1000.0) for _ in range(runs)],
                       [run(1000.0 * (1 + change_pct / 100)) for _ in range(runs)])
        for rule, met in near_rules(judge([c], ALPHA).metrics[0], threshold).items():
            counts[rule] += met
    return counts


def near_section(args: argparse.Namespace, rng: random.Random) -> None:
    print(f"4. near the threshold: {args.near_runs} vs {args.near_runs} runs, run-to-run spread "
          f"{args.near_cv:g}%, threshold {args.threshold:g}%, alpha {ALPHA}, {args.resamples} "
          "draws per row; share of draws meeting each rule for `regression`\n"
          "   (a) estimate past the threshold, adjusted p < alpha; (b) better-side one-sided "
          "bound past the threshold; (c) worse-side bound past the threshold; gate: the "
          "verdict the gate gives\n")
    print(f"{'true change':>11} {'(a)':>7} {'(b)':>7} {'(c)':>7} {'gate':>7}")
    for change in NEAR_CHANGES:
        c = near_row(change, args.near_runs, args.near_cv / 100, args.threshold, rng,
                     args.resamples)
        print(f"{change:>+10.2f}% " + " ".join(f"{100.0 * c[k] / args.resamples:>6.1f}%"
                                                 for k in NEAR_RULES))


def share(c: dict[str, int], k: str) -> float:
    return 100.0 * c[k] / sum(c.values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--threshold", type=float, default=0.5, help="tok_s threshold, percent")
    ap.add_argument("--noisy-cv", type=float, default=3.0, help="run-to-run CV of the noisy case, %%")
    ap.add_argument("--history", type=int, default=12, help="history runs of the +hist designs")
    ap.add_argument("--per-step", type=int, default=6, help="runs per staircase step")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--near-runs", type=int, default=6, help="runs a side of section 4")
    ap.add_argument("--near-cv", type=float, default=0.2,
                    help="run-to-run spread of section 4, %%")
    ap.add_argument("--only", type=int, choices=(1, 2, 3, 4), help="print one section")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    if args.only == 4:
        near_section(args, rng)
        return 0
    cases = (("graphs", "graphs", 0.0), ("eager", "eager", 0.0),
             (f"noisy {args.noisy_cv:g}%", "graphs", args.noisy_cv / 100))
    print(f"1. gate error rates on resampled H200 noise blocks: {args.resamples} resamples per "
          f"row, tok_s threshold {args.threshold}%, alpha {ALPHA}, +hist = {args.history} history "
          "runs\n")
    print(f"{'case':<10} {'base/cand':<10} {'candidate':<9} {'regress':>8} {'pass':>7} "
          f"{'inconcl':>8} {'improve':>8}   reading")
    for name, mode, cv in cases:
        b = blocks(mode)
        for design, nb, nc, with_hist in DESIGNS:
            for kind in KINDS:
                c = gate_row(b, kind, nb, nc, args.history if with_hist else 0, rng,
                             args.resamples, args.threshold, cv)
                reading = (f"false alarms {share(c, 'regression'):.1f}%" if kind == "aa" else
                           f"false passes {share(c, 'pass'):.1f}%, power {share(c, 'regression'):.1f}%")
                print(f"{name:<10} {design:<10} {kind:<9} {share(c, 'regression'):>7.1f}% "
                      f"{share(c, 'pass'):>6.1f}% {share(c, 'inconclusive'):>7.1f}% "
                      f"{share(c, 'improvement'):>7.1f}%   {reading}")
    print(f"\n2. the staircase: five -0.4% steps of {args.per_step} runs (-2% in all) and a flat "
          f"A/A history of {6 * args.per_step} runs; alerts raised per draw "
          f"({args.resamples} draws per row)\n")
    print(f"{'case':<10} {'series':<10} {'threshold':>9} {'0 alerts':>9} {'1 alert':>8} {'2+':>7}")
    for name, mode, cv in cases:
        b = blocks(mode)
        for steps, label in ((5, "staircase"), (0, "flat A/A")):
            for thr in (args.threshold, 1.0, 1.5):
                c = staircase_row(b, steps, args.per_step, thr, rng, args.resamples, cv)
                print(f"{name:<10} {label:<10} {thr:>8g}% {share(c, '0'):>8.1f}% "
                      f"{share(c, '1'):>7.1f}% {share(c, '2+'):>6.1f}%")
    looks = args.max_pairs - args.pairs + 1
    print(f"\n3. alpha and looks: --pairs {args.pairs} --until-decided --max-pairs "
          f"{args.max_pairs} ({looks} looks, each at alpha/{looks} = {look_alpha(ALPHA, looks):.4g}); "
          "the verdict at the stop judged at alpha/looks (the rule) and at full alpha "
          "(the earlier rule)\n")
    print(f"{'case':<10} {'arms':<9} {'judged at':<12} {'regress':>8} {'pass':>7} {'inconcl':>8} "
          f"{'improve':>8}")
    for name, mode, cv in cases:
        b = blocks(mode)
        for kind in KINDS:
            lv, full = looks_row(b, kind, args.pairs, args.max_pairs, args.threshold, rng,
                                 args.resamples, cv)
            for label, c in ((f"alpha/{looks}", lv), ("alpha", full)):
                print(f"{name:<10} {'aa' if kind == 'aa' else 'aa/' + kind:<9} {label:<12} "
                      f"{share(c, 'regression'):>7.1f}% {share(c, 'pass'):>6.1f}% "
                      f"{share(c, 'inconclusive'):>7.1f}% {share(c, 'improvement'):>7.1f}%")
    print()
    near_section(args, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
