"""A series' history as the yardstick of a comparison's runs. Pure: numbers in, numbers out.

- The history is cut into its levels (stats/history.segments: PELT), so the steps of earlier
  changes are not taken for noise; its spread is that of the runs about their own level.
  Robust z: a distance in units of the robust scale of successive differences.
- A history run far from its neighbours is left out (yardstick()): its robust z is
  past OUTLIER_Z (Iglewicz and Hoaglin's cutoff for the modified z-score). Clock
  modes and every other ordinary state of the machine stay in the spread; a crashed or
  throttled process does not.
- A baseline run is far outside the history when its robust z against every level of the
  history is past OUTLIER_Z.
- The run-to-run spread of a comparison with a history is pooled: the sums of squares of the
  history's runs about their levels, the baseline's and the candidate's runs about their own
  means, over the summed degrees of freedom, so each further run (on either side) adds a
  degree of freedom and never takes one away.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .history import OUTLIER_Z, scale_of, segments, tamed


@dataclass(frozen=True)
class Yardstick:
    """The history's levels, its robust scale, and its runs' residuals about their levels
    (its own outliers left out): `runs` of them over `df` degrees of freedom."""

    levels: tuple[float, ...]
    scale: float
    residuals: np.ndarray
    df: int

    @property
    def runs(self) -> int:
        return int(self.residuals.size)


def yardstick(history: np.ndarray, floor: float = 0.0) -> Yardstick:
    """The history (on the analysis scale) as levels and spread; `floor`: a run mean's own
    trial noise, below which no scale goes (runs that repeat one value exactly). Its own
    outliers go first (those stats/history.tamed would pull in to their neighbours, in units
    of the robust scale of successive differences); the rest is cut into its levels."""
    if history.size == 0:
        return Yardstick((), floor, history, 0)
    scale = max(scale_of(list(history)) if history.size > 1 else 0.0, floor)
    x = history[tamed(list(history), scale) == history] if scale > 0 else history
    segs = segments(list(x), scale=scale if scale > 0 else None)
    parts = [x[s:e] - x[s:e].mean() for s, e in segs]
    residuals = np.concatenate(parts) if parts else x[:0]
    levels = tuple(float(np.median(x[s:e])) for s, e in segs)
    return Yardstick(levels, scale, residuals, max(residuals.size - len(parts), 0))


def far_outside(values: np.ndarray, ys: Yardstick) -> list[tuple[int, float, float]]:
    """(index, robust z, nearest level) of each value past OUTLIER_Z from every level."""
    out: list[tuple[int, float, float]] = []
    if ys.scale <= 0 or not ys.levels:
        return out
    for i, v in enumerate(values):
        nearest = min(ys.levels, key=lambda lv: abs(v - lv))
        z = (float(v) - nearest) / ys.scale
        if abs(z) > OUTLIER_Z:
            out.append((i, z, nearest))
    return out


def pooled_sd(ys: Yardstick, groups: list[np.ndarray]) -> tuple[float, float]:
    """(sd, df): the history's residuals pooled with groups of runs, each about its own mean."""
    used = [g for g in groups if g.size > 1]
    df = float(ys.df + sum(g.size - 1 for g in used))
    if df == 0:
        return 0.0, 0.0
    ss = float(np.sum(ys.residuals ** 2)) + sum(float(np.sum((g - g.mean()) ** 2)) for g in used)
    return math.sqrt(ss / df), df
