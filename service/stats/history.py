"""A series' history: change points (ruptures) and noise figures. Pure: numbers in, dataclasses
out; the use case (service/usecases/history.py) reads the runs."""
from __future__ import annotations

import math
import warnings
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


MIN_SEGMENT = 3  # runs a level needs: PELT's smallest segment, and the newest is judged at this
SEGMENT_ALPHA = 0.01  # a segment's level differs from the reference's at this level (Welch)
CONFIRM_RUNS = MIN_SEGMENT


def segments(values: Sequence[float], penalty: float | None = None,
             scale: float | None = None) -> list[tuple[int, int]]:
    """(start, end) of each segment of a series of run means: ruptures' PELT (the linear kernel's
    KernelCPD is PELT on the L2 cost, in C) on a robustly scaled signal, no segment shorter than
    MIN_SEGMENT runs. A window of a longer history passes that history's `penalty` and
    `scale`."""
    n = len(values)
    if n < 2 * MIN_SEGMENT:
        return [(0, n)] if n else []
    x = np.asarray(values, dtype=float)
    z = (x - np.median(x)) / (scale if scale is not None else scale_of(values))
    pen = penalty if penalty is not None else penalty_for(n)
    bkps = [int(b) for b in ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT)
            .fit(z.reshape(-1, 1)).predict(pen=pen)]
    starts = [0] + [b for b in bkps if b < n]
    return [(s, e) for s, e in zip(starts, starts[1:] + [n])]


def differs(segment: np.ndarray, reference: np.ndarray | float) -> bool:
    """The segment's own test: Welch's t-test of its runs against the reference segment's runs
    (a one-sample t-test against a stored reference level), at SEGMENT_ALPHA. Runs without any
    spread differ exactly when their levels do."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # identical runs: scipy warns, p is exact
        if isinstance(reference, np.ndarray):
            p = stats.ttest_ind(segment, reference, equal_var=False).pvalue
        else:
            p = stats.ttest_1samp(segment, reference).pvalue
    return bool(np.isfinite(p) and p < SEGMENT_ALPHA)


def change_points(values: Sequence[float], threshold_pct: float, direction: str | None = None,
                  penalty: float | None = None, reference: float | None = None,
                  scale: float | None = None) -> list[ChangePoint]:
    """THE change-detection rule, for the alerts and the dashboard alike (spec/api.md,
    Change points add up). The history is cut into segments (PELT, at least MIN_SEGMENT runs each);
    each
    segment's level is compared with the reference level (the first segment's, then the level
    of the last change point); a segment is a change point when its level is past the threshold
    from the reference AND its runs differ from the reference segment's by their own test
    (`differs`). A change point moves the reference both ways: a recovery resets it, so a
    regression after a fix is seen again. `direction` ("higher"/"lower" is better) only filters
    what is returned (alerts: the worse moves); None returns both, so the dashboard's change
    points are the alerts' plus the recoveries. A staircase of small steps is one change point
    once the steps add up; a blip shorter than MIN_SEGMENT runs is never a segment of its own,
    so it neither alerts nor moves the reference. The newest segment is judged once it holds
    CONFIRM_RUNS runs. `reference`: the reference level of runs before `values` (a stored
    state); then every segment is judged against that number."""
    x = np.asarray(values, dtype=float)
    segs = segments(values, penalty, scale)
    if len(segs) < (1 if reference is not None else 2):
        return []
    ref_runs: np.ndarray | float
    if reference is not None:
        ref, ref_runs = reference, reference
    else:
        ref_runs = x[segs[0][0]:segs[0][1]]
        ref = float(np.mean(ref_runs))
    out = []
    for start, end in segs[1:] if reference is None else segs:
        if end == len(x) and end - start < CONFIRM_RUNS:
            break
        runs = x[start:end]
        level = float(np.mean(runs))
        if not ref:
            ref, ref_runs = level, runs
            continue
        delta = 100.0 * (level - ref) / abs(ref)
        if abs(delta) >= threshold_pct and differs(runs, ref_runs):
            out.append(ChangePoint(start, ref, level, delta))
            ref, ref_runs = level, runs
    return out if direction is None else [c for c in out if is_worse(c, direction)]


def is_worse(c: ChangePoint, direction: str) -> bool:
    """A move in the worse direction of a metric whose `direction` ("higher"/"lower") is better."""
    return c.delta_pct < 0 if direction == "higher" else c.delta_pct > 0


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
