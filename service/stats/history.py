"""A series' history: change points (ruptures) and noise figures. Pure: numbers in, dataclasses
out; the use case (service/usecases/history.py) reads the runs."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import ruptures
from scipy import stats


@dataclass(frozen=True)
class ChangePoint:
    index: int  # position of the first run after the change
    before_mean: float
    after_mean: float
    delta_pct: float


def change_points(values: Sequence[float], threshold_pct: float, penalty: float | None = None
                  ) -> list[ChangePoint]:
    """Change points in a series of run means: ruptures' kernel change-point detection with the
    linear kernel (PELT on the L2 cost, in C) on a robustly scaled signal; a shift smaller than
    the metric's threshold is not reported."""
    n = len(values)
    if n < 6:
        return []
    x = np.asarray(values, dtype=float)
    diffs = np.abs(np.diff(x))
    scale = 1.4826 * float(np.median(diffs)) / math.sqrt(2) if diffs.size else 0.0
    if scale <= 0:
        scale = float(np.std(x)) or 1.0
    z = (x - np.median(x)) / scale
    pen = penalty if penalty is not None else 3.0 * math.log(n)
    bkps = [int(b) for b in ruptures.KernelCPD(kernel="linear", min_size=2)
            .fit(z.reshape(-1, 1)).predict(pen=pen)]
    out, start = [], 0
    cuts = [b for b in bkps if b < n]
    for i, b in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else n
        mb, ma = float(np.mean(x[start:b])), float(np.mean(x[b:end]))
        delta = 100.0 * (ma - mb) / mb if mb else 0.0
        if abs(delta) >= threshold_pct:
            out.append(ChangePoint(b, mb, ma, delta))
        start = b
    return out


@dataclass(frozen=True)
class RunFigure:
    """One run's figures for one metric (from the run_metrics table)."""

    n: int
    mean: float
    stdev: float | None


@dataclass(frozen=True)
class Noise:
    runs: int
    trials_per_run: int
    mean: float | None
    run_to_run_cv_pct: float | None
    trial_cv_pct: float | None
    block_cv_pct: float | None
    min_detectable_pct: float | None  # one candidate run against this history
    min_detectable_pct_pooled: float | None  # as many candidate runs as the history has


def noise(runs: Sequence[RunFigure], alpha: float = 0.05, power: float = 0.8) -> Noise:
    """Run-to-run and trial-to-trial spread, and the smallest change the numbers of runs and
    trials at hand can detect (two-sided alpha, the given power)."""
    k = len(runs)
    means = np.array([r.mean for r in runs], dtype=float)
    center = float(np.mean(means)) if k else None
    within = [r.stdev for r in runs if r.stdev is not None]
    trials = int(np.median([r.n for r in runs])) if runs else 0
    trial_cv = run_cv = block_cv = mdd = mdd_pooled = None
    if within and center:
        trial_cv = 100.0 * float(np.sqrt(np.mean(np.square(within)))) / center
    if k >= 3 and center:
        run_cv = 100.0 * float(means.std(ddof=1)) / center
        half = k // 2
        if half >= 2:
            blocks = np.array([means[:half].mean(), means[half:2 * half].mean()])
            block_cv = 100.0 * float(blocks.std(ddof=1)) / center
        t = float(stats.t.ppf(1 - alpha / 2, k - 1) + stats.norm.ppf(power))
        mdd = t * run_cv * math.sqrt(1 + 1 / k)
        mdd_pooled = t * run_cv * math.sqrt(2 / k)
    return Noise(k, trials, center, run_cv, trial_cv, block_cv, mdd, mdd_pooled)
