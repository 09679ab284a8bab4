"""A series' noise card: its measured run-to-run spread, the clock modes its run levels show, how
often an A/A gate drawn from its own history says `regression`, and the smallest change it can
detect with 1, 3 and 5 runs a side. Pure: the use case hands in the history's runs."""
from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats
from scipy.signal import find_peaks

from collectors.verdicts import REGRESSION

from .gate import Comparison, judge

RUNS_A_SIDE = (1, 3, 5)  # the detectable change, for these numbers of runs a side
AA_RUNS_A_SIDE = (1, 3)  # the A/A gates drawn from the history
DRAWS = 100  # A/A gates per size
MODES_MIN_RUNS = 10  # fewer run levels say nothing of their modes
PEAK_SHARE = 0.1  # a clock mode: a density peak at least this share of the highest one


@dataclass(frozen=True)
class NoiseCard:
    runs: int
    run_to_run_cv_pct: float | None
    modes: int | None  # clock modes of the run levels; None under MODES_MIN_RUNS runs
    detectable_pct: dict[int, float] = field(default_factory=dict)  # runs a side -> change
    aa_false_alarm_pct: dict[int, float] = field(default_factory=dict)  # runs a side -> %
    aa_draws: int = 0


def modes(means: Sequence[float]) -> int | None:
    """The number of peaks of the run levels' kernel density (scipy's gaussian_kde, Scott's
    bandwidth) holding at least PEAK_SHARE of the highest one's prominence."""
    x = np.asarray(means, dtype=float)
    if len(x) < MODES_MIN_RUNS or float(np.ptp(x)) == 0.0:
        return None if len(x) < MODES_MIN_RUNS else 1
    pad = 0.25 * float(np.ptp(x))
    grid = np.linspace(float(x.min()) - pad, float(x.max()) + pad, 512)
    density = stats.gaussian_kde(x)(grid)
    peaks, _ = find_peaks(density, prominence=PEAK_SHARE * float(density.max()))
    return max(1, len(peaks))


def detectable(run_cv_pct: float | None, runs: int, alpha: float = 0.05, power: float = 0.8
               ) -> dict[int, float]:
    """The smallest change a two-sided test at `alpha` finds with `power`, for m runs a side,
    the spread measured over `runs` runs of the history (its degrees of freedom)."""
    if run_cv_pct is None or runs < 3:
        return {}
    t = float(stats.t.ppf(1 - alpha / 2, runs - 1) + stats.norm.ppf(power))
    return {m: t * run_cv_pct * math.sqrt(2 / m) for m in RUNS_A_SIDE}


def aa_false_alarms(samples: Sequence[Sequence[float]], direction: str, threshold_pct: float,
                    exact: bool, alpha: float = 0.05, seed: int = 0) -> tuple[dict[int, float], int]:
    """Of DRAWS A/A gates per size (m runs a side drawn from the history's runs, the rest of the
    history giving the spread where the gate takes it), the share judged `regression`."""
    k = len(samples)
    rng = random.Random(seed)
    out: dict[int, float] = {}
    for m in AA_RUNS_A_SIDE:
        if k < 2 * m + 3:
            continue
        bad = 0
        for _ in range(DRAWS):
            picked = rng.sample(range(k), 2 * m)
            rest = tuple(float(np.mean(samples[i])) for i in range(k) if i not in picked)
            c = Comparison(metric="aa", unit="", direction=direction, threshold_pct=threshold_pct,
                           exact=exact, series={}, series_id=None,
                           baseline=[samples[i] for i in picked[:m]],
                           candidate=[samples[i] for i in picked[m:]],
                           baseline_ids=tuple(picked[:m]), candidate_ids=tuple(picked[m:]),
                           history=rest)
            bad += judge([c], alpha).metrics[0].verdict == REGRESSION
        out[m] = 100.0 * bad / DRAWS
    return out, DRAWS if out else 0


def card(samples: Sequence[Sequence[float]], direction: str, threshold_pct: float, exact: bool,
         alpha: float = 0.05, seed: int = 0) -> NoiseCard:
    """The noise card of a history given as its runs' samples, oldest first."""
    means = [float(np.mean(s)) for s in samples if len(s)]
    k = len(means)
    center = float(np.mean(means)) if k else 0.0
    cv = 100.0 * float(np.std(means, ddof=1)) / abs(center) if k >= 3 and center else None
    rates, draws = aa_false_alarms([s for s in samples if len(s)], direction, threshold_pct,
                                   exact, alpha, seed)
    return NoiseCard(k, cv, modes(means), detectable(cv, k, alpha), rates, draws)
