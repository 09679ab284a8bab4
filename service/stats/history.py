"""A series' history: change points (ruptures) and noise figures. Pure: numbers in, dataclasses
out; the use case (service/history/reads.py) reads the runs."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import ruptures
from scipy import stats
from scipy.ndimage import median_filter


@dataclass(frozen=True)
class ChangePoint:
    index: int  # position of the first run of the segment that moved
    before_mean: float  # the reference level it is compared with
    after_mean: float  # the segment's level
    delta_pct: float  # 100 * (after - before) / before
    continues: bool = False  # the reference segment already trended this way: one drift, no new alert


def penalty_for(n: int) -> float:
    """PELT's penalty for a history of n runs (a window of a longer history uses the history's)."""
    return 3.0 * math.log(max(n, 2))


def diff_scale(values: Sequence[float]) -> float:
    """The robust scale of successive differences (robust to the steps themselves): 0 where
    most runs repeat their predecessor exactly."""
    diffs = np.abs(np.diff(np.asarray(values, dtype=float)))
    return 1.4826 * float(np.median(diffs)) / math.sqrt(2) if diffs.size else 0.0


def scale_of(values: Sequence[float]) -> float:
    """The run-to-run noise scale PELT's signal is divided by: `diff_scale`, else the standard
    deviation, else 1."""
    scale = diff_scale(values)
    return scale if scale > 0 else (float(np.std(np.asarray(values, dtype=float))) or 1.0)


OUTLIER_Z = 3.5  # a run this many noise scales from its neighbours' median is an outlier
NEIGHBOURS = 7  # the running median's window: it follows a step, and outlasts 3 outliers in it


def tamed(values: Sequence[float], scale: float | None = None) -> np.ndarray:
    """The runs with each outlier (further than OUTLIER_Z noise scales from the running median
    of the NEIGHBOURS runs about it, scipy) replaced by that median: a crashed or throttled
    process, or a blip of a run or two, is no level of its own, and a step (which the running
    median follows) stays whole."""
    x = np.asarray(values, dtype=float)
    if x.size < NEIGHBOURS:
        return x
    sc = scale if scale is not None else scale_of(values)
    local = median_filter(x, size=NEIGHBOURS, mode="mirror")
    return np.where(np.abs(x - local) > OUTLIER_Z * sc, local, x)


MIN_SEGMENT = 3  # runs a level needs: PELT's smallest segment, and the newest is judged at this
SEGMENT_ALPHA = 0.01  # a segment's level is past the threshold from the reference's at this level
TREND_ALPHA = 0.05  # the runs since a change point trend on (merging into one episode never hides one)
NEWEST_ALPHA = 0.001  # the newest segment, still growing, at this one: an alert once delivered stays
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


def trending(runs: np.ndarray, down: bool) -> bool:
    """The runs of a segment trend one way (a drift): the least-squares slope over their order
    (scipy.stats.linregress) has that sign and its two-sided p is below TREND_ALPHA."""
    if runs.size < 2 * MIN_SEGMENT or float(np.ptp(runs)) == 0:
        return False
    fit = stats.linregress(np.arange(runs.size), runs)
    return bool((fit.slope < 0) == down and fit.pvalue < TREND_ALPHA)


def past_threshold(segment: np.ndarray, reference: np.ndarray | float, threshold_pct: float,
                   scale: float, scale_df: int, alpha: float = SEGMENT_ALPHA) -> bool:
    """The segment's level is past the threshold from the reference with its interval: the
    one-sided test of "the level moved by more than the threshold" (H0: within it) rejects at
    `alpha`. Welch's t: each segment's variance from its own runs, or the history's robust
    noise `scale` (with its `scale_df`) where that is wider, so a few runs that happen to agree
    are never trusted past the history's noise; a stored reference level adds none."""
    ref = reference if isinstance(reference, np.ndarray) else np.array([reference])
    level, ref_level = float(np.mean(segment)), float(np.mean(ref))
    limit = abs(ref_level) * threshold_pct / 100.0
    parts = []  # (variance of the mean, its degrees of freedom)
    for g in (segment, ref) if isinstance(reference, np.ndarray) else (segment,):
        own = float(np.var(g, ddof=1)) if g.size > 1 else 0.0
        parts.append((own / g.size, g.size - 1) if own > scale ** 2 else
                     (scale ** 2 / g.size, max(scale_df, 1)))
    var = sum(v for v, _ in parts)
    if var == 0:
        return abs(level - ref_level) > limit
    df = var ** 2 / sum(v ** 2 / d for v, d in parts)
    p = float(stats.t.sf((abs(level - ref_level) - limit) / math.sqrt(var), df))
    return p < alpha


def _within(x: np.ndarray, segs: list[tuple[int, int]]) -> float:
    """The standard deviation of the runs about their own segment's mean."""
    df = x.size - len(segs)
    if df <= 0:
        return 0.0
    return math.sqrt(sum(float(np.sum((x[s:e] - x[s:e].mean()) ** 2)) for s, e in segs) / df)


def change_points(values: Sequence[float], threshold_pct: float, direction: str | None = None,
                  penalty: float | None = None, reference: float | None = None,
                  scale: float | None = None, after_change: bool = False) -> list[ChangePoint]:
    """THE change-detection rule, for the alerts and the dashboard alike (spec/api.md, Change points
    add up). The history is cut into segments (PELT, at least MIN_SEGMENT runs each); each
    segment's level is compared with the reference level (the first segment's, then the level
    of the last change point); a segment is a change point when its level is past the threshold
    from the reference with its interval (`past_threshold`: a level inside the threshold, or
    one whose few runs cannot tell, never alerts). A change point moves the reference both
    ways: a recovery resets it, so a regression after a fix is seen again. `direction`
    ("higher"/"lower" is better) only filters what is returned (alerts: the worse moves); None
    returns both, so the dashboard's change points are the alerts' plus the recoveries. A
    staircase of small steps is one change point once the steps add up; a blip shorter than
    MIN_SEGMENT runs is never a segment of its own, so it neither alerts nor moves the
    reference; an outlying run is first pulled in to its neighbours (`tamed`), so it cannot
    make a level either. A change point that follows another (`after_change`: the part given
    starts at one) whose runs since that one are few (under 2 * MIN_SEGMENT) or trend its way
    continues a drift (`continues`: it moves the reference and raises no alert of its own, one
    alert per episode). The newest segment, still growing, is judged at NEWEST_ALPHA, so an
    alert once delivered is rarely withdrawn. It is judged once it holds CONFIRM_RUNS runs.
    `reference`: the reference level of runs before `values` (a stored state); then every
    segment is judged against that number."""
    pelt = scale if scale is not None else scale_of(values)
    x = tamed(values, pelt)
    segs = segments(list(x), penalty, pelt)
    # the noise a level is judged with: successive differences, and the runs' spread about
    # their own levels (clock modes, which successive differences miss)
    noise = max(scale if scale is not None else diff_scale(values), _within(x, segs))
    if len(segs) < (1 if reference is not None else 2):
        return []
    ref_runs: np.ndarray | float
    if reference is not None:
        ref, ref_runs = reference, reference
    else:
        ref_runs = x[segs[0][0]:segs[0][1]]
        ref = float(np.mean(ref_runs))
    out: list[ChangePoint] = []
    since = segs[0][0]
    for start, end in segs[1:] if reference is None else segs:
        if end == len(x) and end - start < CONFIRM_RUNS:
            break
        runs = x[start:end]
        level = float(np.mean(runs))
        if not ref:
            ref, ref_runs = level, runs
            continue
        delta = 100.0 * (level - ref) / abs(ref)
        alpha = NEWEST_ALPHA if end == len(x) else SEGMENT_ALPHA
        if abs(delta) >= threshold_pct and past_threshold(runs, ref_runs, threshold_pct, noise,
                                                          len(x) - 1, alpha):
            stretch = x[since:start]  # every run since the reference moved
            drift = (bool(out) or after_change) and reference is None and \
                (stretch.size < 2 * MIN_SEGMENT or trending(stretch, delta < 0))
            out.append(ChangePoint(start, ref, level, delta, continues=drift))
            ref, ref_runs, since = level, runs, start
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
