"""Which level of a key carries its effect, and which pairs of keys act together, over the same
fit as the attribution (service/stats/attribution: one outcome per run, every key a factor).

- the outlier level of a key: each level in turn gets a mean-shift term (1 at its runs, 0
  elsewhere) in an OLS fit of the outcome on the other keys and, for a numeric key of 3 or more
  positive levels, a trend in the log of the key's value (throughput that grows with batch size
  is a trend, not an outlier). The level whose term has the largest |t| (its standardized
  deleted residual) is the outlier; where the fit leaves no residual degrees of freedom, the
  largest |shift| instead. Ties go to the level with the lowest mean.
- interactions: per pair of keys, a type II ANOVA (statsmodels `anova_lm(typ=2)`) of the outcome
  on every key plus the pair's interaction term; the interaction's F-test p-values are Holm-
  corrected across the pairs, and its share is partial: its sum of squares over itself plus the
  residual's (the variation the main effects leave).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests

from .attribution import RunFacts, factor_keys, flags_filled, level_key, outcome_of


@dataclass(frozen=True)
class Interaction:
    keys: tuple[str, str]
    explains: float  # partial share: of the variation the main effects leave, 0..1
    p_value: float
    p_corrected: float  # Holm-corrected across the pairs tested

    @property
    def name(self) -> str:
        return " x ".join(self.keys)


def _fitted(rows: Sequence[RunFacts], outcome: str) -> tuple[list[RunFacts], pd.DataFrame, list[str]]:
    measured = [(r, outcome_of(r, outcome)) for r in flags_filled(rows)]
    kept = [r for r, y in measured if y is not None]
    keys = factor_keys(kept)
    data: dict[str, list[Any]] = {f"f{i}": [repr(r.config.get(k)) for r in kept]
                                  for i, k in enumerate(keys)}
    data["y"] = [y for _, y in measured if y is not None]
    return kept, pd.DataFrame(data), keys


def _ols(formula: str, frame: pd.DataFrame) -> Any:
    with warnings.catch_warnings():  # a partly confounded design: the fit says what it can
        warnings.simplefilter("ignore")
        return smf.ols(formula, data=frame).fit()


def outlier_level(rows: Sequence[RunFacts], outcome: str, key: str) -> str | None:
    """The level of `key` (as str) with the largest standardized shift from the fit of the
    others; None where the key does not vary or the outcome is constant."""
    kept, frame, keys = _fitted(rows, outcome)
    name = key.split("/")[0]
    if name not in keys or frame["y"].nunique() <= 1:
        return None
    i = keys.index(name)
    levels = sorted({r.config.get(name) for r in kept}, key=level_key)
    terms = [f"C(f{j})" for j in range(len(keys)) if j != i]
    if len(levels) >= 3 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                and v > 0 for v in levels):
        frame["trend"] = [math.log(float(r.config[name])) for r in kept]
        terms.append("trend")
    means = frame.groupby(f"f{i}")["y"].mean()
    scored = []
    for v in levels:
        frame["shift"] = (frame[f"f{i}"] == repr(v)).astype(float)
        fit = _ols("y ~ " + " + ".join(terms + ["shift"]), frame)
        t = fit.tvalues["shift"] if fit.df_resid >= 1 else math.nan
        size = abs(float(fit.params["shift"])) if math.isnan(t) else abs(float(t))
        scored.append((-round(size, 9), float(means[repr(v)]), str(v)))
    return min(scored)[2]


def interactions(rows: Sequence[RunFacts], outcome: str) -> list[Interaction]:
    """The pairs of keys whose interaction could be tested, strongest first."""
    _, frame, keys = _fitted(rows, outcome)
    if frame["y"].nunique() <= 1:
        return []
    mains = [f"C(f{i})" for i in range(len(keys))]
    found: list[tuple[tuple[str, str], float, float]] = []
    for a, b in combinations(range(len(keys)), 2):
        term = f"C(f{a}):C(f{b})"
        fit = _ols("y ~ " + " + ".join(mains + [term]), frame)
        if fit.df_resid < 1 or fit.ssr <= 0:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = anova_lm(fit, typ=2)
        if term not in table.index or math.isnan(table.loc[term, "PR(>F)"]):
            continue
        ss = float(table.loc[term, "sum_sq"])
        found.append(((keys[a], keys[b]), ss / (ss + float(fit.ssr)),
                      float(table.loc[term, "PR(>F)"])))
    if not found:
        return []
    corrected = multipletests([p for _, _, p in found], method="holm")[1]
    out = [Interaction(k, s, p, float(c)) for (k, s, p), c in zip(found, corrected, strict=True)]
    return sorted(out, key=lambda x: -x.explains)
