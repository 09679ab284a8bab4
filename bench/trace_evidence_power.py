#!/usr/bin/env python3
"""How often the traces' evidence across runs names a slowed kernel, and how often a kernel that
only jittered (spec/api.md, Trace evidence).

From the real H200 trace's per-step kernel times (tests/data/kineto_1layer_M4.json.gz, analyzed
once), each draw makes --runs baseline and --runs candidate runs: every kernel's time multiplied
by 1 + --jitter * N(0, 1), one factor per kernel per run, and the --kernel's candidates by
--slowdown. The draws are judged by service.stats.traces.trace_changes, as the gate does.

    python bench/trace_evidence_power.py [--draws 200] [--runs 3] [--jitter 0.01] [--slowdown 1.15]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors.traces import analyze_files  # noqa: E402
from collectors.traces.diff import run_kernels  # noqa: E402
from collectors.traces.names import kernel_key  # noqa: E402
from service.stats.traces import RunTrace, trace_changes  # noqa: E402

SOURCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "kineto_1layer_M4.json.gz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jitter", type=float, default=0.01)
    ap.add_argument("--slowdown", type=float, default=1.15)
    ap.add_argument("--kernel", default="nvjet_sm90_tst_128x8_64x12_4x1_v_bz_NNT")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    s = analyze_files([SOURCE])
    kernels, names, _ = run_kernels(s)
    step = float(s["step_gpu_time_us_mean"] or 0.0)
    slowed = kernel_key(a.kernel)
    rng = np.random.default_rng(a.seed)

    def run(i: int, slow: bool) -> RunTrace:
        k = {key: v * (1 + a.jitter * rng.standard_normal()) * (a.slowdown if slow and
                                                              key == slowed else 1.0)
             for key, v in kernels.items()}
        return RunTrace(i, k, names, True, {"step_gpu_time_us_mean": step})

    named = jitter_named = 0
    for _ in range(a.draws):
        tc = trace_changes([run(i, False) for i in range(a.runs)],
                           [run(a.runs + i, True) for i in range(a.runs)])
        keys = [c.key for c in tc.evidence]
        named += slowed in keys
        jitter_named += any(k != slowed for k in keys)
    print(f"{a.draws} draws, {a.runs} runs a side, jitter {a.jitter:.1%}, {a.kernel} x"
          f"{a.slowdown:g} ({kernels[slowed]:.1f} of {step:,.1f} us per step):")
    print(f"  slowed kernel named: {named / a.draws:.1%}")
    print(f"  a jitter-only kernel named: {jitter_named / a.draws:.1%}")


if __name__ == "__main__":
    main()
