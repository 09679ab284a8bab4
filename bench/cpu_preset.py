#!/usr/bin/env python3
"""The CPU preset's spread (`collect decode --preset cpu`, collectors/bench/presets.py) and what
the gate makes of it.

`collect`: one process per run, interleaved rounds of the preset (A, twice a round), the preset
with `--extra-work 3` (X3), `--extra-work 2` (X2) and `--extra-work 6` (X6, the README tour's
slowdown), and the preset with two torch threads (T2), until SECONDS pass; each run's trials
appended to OUT as one JSON line. Run it pinned to two cores, as a 2-core CI runner is:

    taskset -c 0,1 python bench/cpu_preset.py collect --seconds 170 --out runs.jsonl

`judge`: from such a file, each arm's run means of `cpu_tok_s` (min, max, CV) and, by
resampling runs without replacement, the share of draws the gate (service.stats.gate.judge)
calls pass / regression / inconclusive for a design of K baseline runs against M candidate runs
at each threshold; and the interleaved experiment (service.stats.blocked.assess_blocks) of the
rounds' (A, X3) pairs:

    python bench/cpu_preset.py judge data/cpu_preset/runs_2core.jsonl
"""
from __future__ import annotations

import argparse
import json
import random
import statistics as st
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARMS = {"A": {}, "X2": {"extra_work": 2}, "X3": {"extra_work": 3}, "T2": {"threads": 2},
        "X6": {"extra_work": 6}}
ROUND = ("A", "X3", "A", "X2", "T2", "X6")
ONE_RUN = ("import sys, json; from collectors.bench.decode import DecodeConfig, run; "
           "r = run(DecodeConfig(**json.loads(sys.argv[1])))[0]; print(json.dumps(r['trials']))")


def collect(seconds: float, out: Path) -> None:
    from collectors.bench.presets import PRESETS

    base = {**PRESETS["cpu"], "quiet": True}
    t0, i = time.time(), 0
    with open(out, "w") as f:
        while time.time() - t0 < seconds:
            for arm in ROUND:
                cfg = {**base, **ARMS[arm], "workdir": f"/tmp/perfwarden-cpu-preset-{i}"}
                p = subprocess.run([sys.executable, "-c", ONE_RUN, json.dumps(cfg)],
                                   capture_output=True, text=True, cwd=ROOT)
                trials = json.loads(p.stdout) if p.returncode == 0 else p.stderr[-300:]
                f.write(json.dumps({"i": i, "arm": arm, "t": round(time.time() - t0, 1),
                                    "trials": trials}) + "\n")
                f.flush()
                i += 1
            print(f"{i} runs, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)


def judge(path: Path, draws: int, seed: int) -> None:
    from service.stats.blocked import assess_blocks
    from service.stats.gate import Comparison
    from service.stats.gate import judge as gate

    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    runs: dict[str, list[list[float]]] = {}
    for r in rows:
        runs.setdefault(r["arm"], []).append([t["cpu_tok_s"] for t in r["trials"]])
    a_mean = st.mean(st.mean(r) for r in runs["A"])
    print("| arm | runs | cpu_tok_s run means | max/min | CV of run means | vs A |")
    print("|---|---:|---:|---:|---:|---:|")
    for arm, rs in runs.items():
        m = [st.mean(r) for r in rs]
        print(f"| {arm} | {len(rs)} | {min(m):.0f}-{max(m):.0f} | {max(m) / min(m):.2f}x | "
              f"{100 * st.stdev(m) / st.mean(m):.1f}% | {st.mean(m) / a_mean:.2f}x |")
    rng = random.Random(seed)
    half = len(runs["A"]) // 2  # runs in the order they ran: the first half long before the rest
    slow = [arm for arm in ("X3", "X2", "X6") if arm in runs]  # files before X6 lack it
    print("\n| K/M | threshold | A/A pass / regression / inconclusive | A/A across time: pass / "
          "inconclusive | " + " | ".join(f"{arm} regression" for arm in slow) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(slow))
    for k, n_cand in ((3, 1), (5, 3)):
        for t in (15.0, 20.0, 25.0, 30.0):
            share = {}
            for arm in ("A", "A-time", *slow):
                n = {"pass": 0, "fail": 0, "inconclusive": 0}
                for _ in range(draws):
                    if arm == "A":
                        pick = rng.sample(runs["A"], k + n_cand)
                        base, cand = pick[:k], pick[k:]
                    elif arm == "A-time":  # a baseline from early runs, the candidate's later
                        base = rng.sample(runs["A"][:half], k)
                        cand = rng.sample(runs["A"][half:], n_cand)
                    else:
                        base, cand = rng.sample(runs["A"], k), rng.sample(runs[arm], n_cand)
                    c = Comparison("cpu_tok_s", "tok/s", "higher", t, False, {}, None, base, cand)
                    n[gate([c]).verdict] += 1
                share[arm] = {v: 100 * x / draws for v, x in n.items()}
            a = share["A"]
            print(f"| {k}/{n_cand} | {t:g}% | {a['pass']:.0f}% / {a['fail']:.0f}% / "
                  f"{a['inconclusive']:.0f}% | {share['A-time']['pass']:.0f}% / "
                  f"{share['A-time']['inconclusive']:.0f}% | "
                  + " | ".join(f"{share[arm]['fail']:.0f}%" for arm in slow) + " |")
    pairs = [(a, x) for a, x in zip(runs["A"][::2], runs["X3"])]
    e = assess_blocks(pairs, "higher")
    print(f"\ninterleaved (A, X3) blocks: {len(pairs)}, change {e.delta_pct:+.1f}%, 95% CI "
          f"{e.ci_low_pct:+.1f}..{e.ci_high_pct:+.1f}%, bound {e.bound_pct:+.1f}%")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--seconds", type=float, default=170.0)
    c.add_argument("--out", type=Path, required=True)
    j = sub.add_parser("judge")
    j.add_argument("file", type=Path)
    j.add_argument("--draws", type=int, default=1000)
    j.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.cmd == "collect":
        collect(a.seconds, a.out)
    else:
        judge(a.file, a.draws, a.seed)


if __name__ == "__main__":
    main()
