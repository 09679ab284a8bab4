#!/usr/bin/env python3
"""Error rates of the gate's history rules, measured on real H200 run noise with outliers and
bimodal clocks (spec/api.md, Few baseline runs; the Holm family of the verdicts).

The noise: every A/A group of runs of one code under data/h200/ (noise/graphs, ab, experiment,
decide: separate processes of CUDA-graph decode) gives its run means' relative residuals about
the group's mean; a simulated run is one residual drawn at random, scaled to --sd (percent of
the level), plus a slow clock mode (--mode-gap percent, with probability --slow), plus, with
probability --outlier, a process --outlier-pct slower. Each run has 5 trials about its mean at
the residuals' trial spread. The statistics are the API's own (service.stats.gate.judge).

Cases (each a rate over --draws draws):
1. a low single baseline: one baseline run --low-pct below a 20-run history, the candidate
   truly -1% (1 and 2 candidate runs): how often it passes or improves (goal: never);
2. 3 baseline runs vs 1 candidate run at a true -0.6% and -0.5% (threshold 0.5%), with no
   history and with a 20-run history: false passes (goals <= 2% and <= 5%);
3. 8 comparisons (8 series, 3 vs 3 runs) all at a true -0.45%: requests that fail (goal
   <= 6%);
4. 1 vs 1 and 1 vs 2 runs with a 20-run history at 0% and -1%: pass and regression shares
   (more candidate runs must not give less power);
5. KV capacity across two H200 leases (data/h200/experiment vs data/h200/decide): verdicts.

    python bench/gate_noise.py [--draws 2000] [--seed 1]
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from service.stats.gate import Comparison, judge  # noqa: E402

GROUPS = ("noise/graphs/aa-*.json", "ab/*.json", "experiment/*.json", "decide/*.json")


def residuals() -> tuple[list[float], float]:
    """Relative residuals of run means about their A/A group's mean, and the trials' relative
    spread within a run."""
    groups: dict[tuple, list[list[float]]] = {}
    for pattern in GROUPS:
        for f in sorted((ROOT / "data" / "h200").glob(pattern)):
            recs = json.loads(f.read_text())
            for r in recs if isinstance(recs, list) else [recs]:
                tok = r["metrics"].get("tok_s")
                if not tok or "plant" in r.get("label", "") + f.name and \
                        (r.get("experiment") or {}).get("arm") == "candidate":
                    continue
                key = (f.parent.name, r.get("label", "").split("-")[0],
                       json.dumps(r["config"], sort_keys=True),
                       (r.get("experiment") or {}).get("arm"))
                groups.setdefault(key, []).append(tok["samples"])
    res, within = [], []
    for runs in groups.values():
        means = [statistics.fmean(s) for s in runs]
        if len(means) < 3:
            continue
        center = statistics.fmean(means)
        res += [m / center - 1 for m in means]
        within += [statistics.stdev(s) / statistics.fmean(s) for s in runs if len(s) > 1]
    return res, statistics.fmean(within)


class Noise:
    def __init__(self, rng: random.Random, args: argparse.Namespace):
        self.rng, self.args = rng, args
        self.res, self.within = residuals()
        self.scale = args.sd / 100 / statistics.pstdev(self.res)

    def run(self, level: float = 1.0, outliers: bool = True) -> list[float]:
        a = self.args
        x = level * (1 + self.scale * self.rng.choice(self.res))
        if self.rng.random() < a.slow:
            x *= 1 - a.mode_gap / 100
        if outliers and self.rng.random() < a.outlier:
            x *= 1 - a.outlier_pct / 100
        return [1000 * x * (1 + self.rng.gauss(0, self.within)) for _ in range(5)]

    def means(self, n: int) -> tuple[float, ...]:
        return tuple(statistics.fmean(self.run()) for _ in range(n))


def comp(base, cand, history=(), name="tok_s", threshold=0.5) -> Comparison:
    return Comparison(name, "tok/s", "higher", threshold, False, {}, None, base, cand,
                      history=tuple(history))


def rates(verdicts: Counter, n: int) -> str:
    return ", ".join(f"{v} {100 * verdicts[v] / n:.1f}%" for v in
                     ("pass", "improvement", "inconclusive", "regression") if verdicts[v])


def low_baseline(nz: Noise, draws: int, low_pct: float) -> None:
    for m in (1, 2):
        got: Counter = Counter()
        for _ in range(draws):
            base = [[v * (1 - low_pct / 100) for v in nz.run(outliers=False)]]
            cand = [nz.run(0.99) for _ in range(m)]
            got[judge([comp(base, cand, nz.means(20))]).metrics[0].verdict] += 1
        print(f"  1 baseline run {low_pct:g}% low vs {m} candidate run(s), true -1%, 20-run "
              f"history: {rates(got, draws)}")


def three_vs_one(nz: Noise, draws: int) -> None:
    for hist in (0, 20):
        for true in (-0.6, -0.5):
            got: Counter = Counter()
            for _ in range(draws):
                base = [nz.run() for _ in range(3)]
                history = nz.means(hist) if hist else ()
                got[judge([comp(base, [nz.run(1 + true / 100)], history)]
                          ).metrics[0].verdict] += 1
            print(f"  3 vs 1 at {true:+g}% (threshold 0.5%), "
                  f"{f'{hist}-run history' if hist else 'no history'}: {rates(got, draws)}")


def family(nz: Noise, draws: int) -> None:
    got: Counter = Counter()
    for _ in range(draws):
        items = [comp([nz.run() for _ in range(3)], [nz.run(0.9955) for _ in range(3)],
                      name=f"m{i}") for i in range(8)]
        got[judge(items).verdict] += 1
    print("  8 comparisons of 3 vs 3 at -0.45% (threshold 0.5%), requests: "
          + ", ".join(f"{v} {100 * got[v] / draws:.1f}%" for v in ("pass", "inconclusive", "fail")))


def single_runs(nz: Noise, draws: int) -> None:
    for true in (0.0, -1.0):
        for m in (1, 2, 3):
            got: Counter = Counter()
            for _ in range(draws):
                cand = [nz.run(1 + true / 100) for _ in range(m)]
                got[judge([comp([nz.run()], cand, nz.means(20))]).metrics[0].verdict] += 1
            print(f"  1 vs {m} with a 20-run history at {true:+g}%: {rates(got, draws)}")


def kv_leases() -> None:
    def load(lease: str) -> dict[int, list[list[float]]]:
        out: dict[int, list[list[float]]] = {}
        for f in sorted((ROOT / "data" / "h200" / lease).glob("*.json")):
            for r in json.loads(f.read_text()):
                if "kv_capacity_tokens" in r["metrics"]:
                    out.setdefault(r["config"]["batch_size"], []).append(
                        r["metrics"]["kv_capacity_tokens"]["samples"])
        return out
    a, b = load("experiment"), load("decide")
    for bs in sorted(set(a) & set(b)):
        for base, cand, what in ((a[bs], b[bs], "experiment -> decide"),
                                 (b[bs], a[bs], "decide -> experiment")):
            c = Comparison("kv_capacity_tokens", "tokens", "higher", 0.1, True, {}, None, base, cand)
            r = judge([c]).metrics[0]
            delta = r.assessment.delta_pct if r.assessment else None
            print(f"  KV A/A M={bs} {what} ({len(base)} vs {len(cand)} runs, "
                  f"{delta:+.3f}%): {r.verdict}")


OPTIONS = (("--draws", int, 2000, "draws of each case"), ("--seed", int, 1, "random seed"),
           ("--sd", float, 0.12, "run-to-run sd within a clock mode, %%"),
           ("--mode-gap", float, 0.3, "the slow clock mode, %% slower"),
           ("--slow", float, 0.2, "share of runs in the slow mode"),
           ("--outlier", float, 0.02, "share of outlier processes"),
           ("--outlier-pct", float, 3.0, "an outlier process, %% slower"),
           ("--low-pct", float, 3.0, "the low baseline run of case 1, %% low"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, kind, default, what in OPTIONS:
        ap.add_argument(flag, type=kind, default=default, help=what)
    args = ap.parse_args()
    nz = Noise(random.Random(args.seed), args)
    print(f"noise: {len(nz.res)} real A/A run residuals scaled to sd {args.sd}%, slow mode "
          f"-{args.mode_gap}% in {100 * args.slow:g}% of runs, {100 * args.outlier:g}% outlier "
          f"processes at -{args.outlier_pct}%; {args.draws} draws, seed {args.seed}")
    low_baseline(nz, args.draws, args.low_pct)
    three_vs_one(nz, args.draws)
    family(nz, args.draws // 4)
    single_runs(nz, args.draws // 2)
    kv_leases()


if __name__ == "__main__":
    main()
