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
    index: int  # position of the first run of the segment that moved
    before_mean: float  # the reference level it is compared with
    after_mean: float  # the segment's level
    delta_pct: float  # 100 * (after - before) / before


def penalty_for(n: int) -> float:
    """PELT's penalty for a history of n runs (a window of a longer history uses the history's)."""
    return 3.0 * math.log(max(n, 2))


def scale_of(values: Sequence[float]) -> float:
    """The run-to-run noise scale PELT's signal is divided by: the MAD of successive
    differences (robust to the steps themselves), else the standard deviation, else 1."""
    x = np.asarray(values, dtype=float)
    diffs = np.abs(np.diff(x))
    scale = 1.4826 * float(np.median(diffs)) / math.sqrt(2) if diffs.size else 0.0
    return scale if scale > 0 else (float(np.std(x)) or 1.0)


def segments(values: Sequence[float], penalty: float | None = None,
             scale: float | None = None) -> list[tuple[int, int]]:
    """(start, end) of each segment of a series of run means: ruptures' PELT (the linear kernel's
    KernelCPD is PELT on the L2 cost, in C) on a robustly scaled signal. A window of a longer
    history passes that history's `penalty` and `scale`."""
    n = len(values)
    if n < 6:
        return [(0, n)] if n else []
    x = np.asarray(values, dtype=float)
    z = (x - np.median(x)) / (scale if scale is not None else scale_of(values))
    pen = penalty if penalty is not None else penalty_for(n)
    bkps = [int(b) for b in ruptures.KernelCPD(kernel="linear", min_size=2)
            .fit(z.reshape(-1, 1)).predict(pen=pen)]
    starts = [0] + [b for b in bkps if b < n]
    return [(s, e) for s, e in zip(starts, starts[1:] + [n])]


CONFIRM_RUNS = 3  # the newest segment is judged once it holds this many runs


def change_points(values: Sequence[float], threshold_pct: float, direction: str | None = None,
                  penalty: float | None = None, reference: float | None = None,
                  scale: float | None = None) -> list[ChangePoint]:
    """Change points that add up (spec/api.md v1.2 item 6): each segment's level is compared
    with the reference level (the first segment's, then the level the last change point moved
    to); a segment past the threshold from it is a change point and becomes the reference. So
    a staircase of small steps is one change point once the steps add up to the threshold.
    `direction` ("higher"/"lower" is better): only changes in the worse direction count (and
    move the reference), as alerts need; None: both directions. The newest segment is judged
    only once it holds CONFIRM_RUNS runs: with one run at a new level PELT's two-run minimum
    would start the segment a run early, and a lone run may be an outlier. `reference`: the
    reference level of runs before `values` (a stored state); then every segment is judged."""
    x = np.asarray(values, dtype=float)
    segs = segments(values, penalty, scale)
    if len(segs) < (1 if reference is not None else 2):
        return []
    ref = reference if reference is not None else float(np.mean(x[segs[0][0]:segs[0][1]]))
    out = []
    for start, end in segs[1:] if reference is None else segs:
        if end == len(x) and end - start < CONFIRM_RUNS:
            break
        level = float(np.mean(x[start:end]))
        if not ref:
            ref = level
            continue
        delta = 100.0 * (level - ref) / abs(ref)
        worse = delta < 0 if direction == "higher" else delta > 0
        if abs(delta) >= threshold_pct and (direction is None or worse):
            out.append(ChangePoint(start, ref, level, delta))
            ref = level
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
