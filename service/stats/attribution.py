"""Which config key explains what: a factorial set of runs (batch size x shared-expert order x
CUDA graphs, ...) and one outcome per run. Pure: rows in, dataclasses out.

- run means: log of each run's mean (effects are relative), one ANOVA over every factor at once
  (statsmodels OLS, type II sums of squares): per key its F-test p-value and the share of the
  variation it explains;
- trial spread: each run's trial CV, the same ANOVA;
- determinism: each run's share of bitwise-identical repeats, the same ANOVA for the shares (runs
  are the unit: repeats of one run are clustered, so pooling them across runs would overstate the
  evidence). The share counts the repeats that match the first (reference) repeat among the
  others: the reference is never counted as a match of itself, so a run of n repeats that all
  differ has share 0, not 1/n. A run of fewer than 2 repeats has no share.
- a single-trial run has no trial spread: its CV is missing (None) and it drops out of the
  spread model, never entering it as 0.
- several keys are tested at once: each key's p-value is corrected across the keys of the model
  (Holm, statsmodels' multipletests), and a key counts as significant on its corrected p.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests


@dataclass(frozen=True)
class RunFacts:
    config: dict[str, Any]
    mean: float | None
    cv_pct: float | None
    identical: int | None = None
    repeats: int | None = None


@dataclass(frozen=True)
class Factor:
    key: str
    levels: list[Any]
    effect: float  # range of the level means: % (run means), CV points (spread), share (determinism)
    p_value: float | None
    explains: float  # share of the outcome's variation, 0..1
    level_values: dict[str, float]
    p_corrected: float | None = None  # Holm-corrected across the keys of one model


def factor_keys(rows: Sequence[RunFacts]) -> list[str]:
    """Keys with more than one level; a key whose levels map one to one onto an earlier key's
    (confounded: these runs cannot tell them apart) is left out, and named with that key."""
    keys = sorted({k for r in rows for k in r.config})
    varying = [k for k in keys if len({repr(r.config.get(k)) for r in rows}) > 1]
    kept: list[str] = []
    for k in varying:
        if not any(_confounded(rows, k, j) for j in kept):
            kept.append(k)
    return kept


def confounded_with(rows: Sequence[RunFacts], key: str) -> list[str]:
    keys = sorted({k for r in rows for k in r.config} - {key})
    return [k for k in keys if len({repr(r.config.get(k)) for r in rows}) > 1
            and _confounded(rows, key, k)]


def _confounded(rows: Sequence[RunFacts], a: str, b: str) -> bool:
    pairs = {(repr(r.config.get(a)), repr(r.config.get(b))) for r in rows}
    return len(pairs) == len({p[0] for p in pairs}) == len({p[1] for p in pairs})


def _anova(frame: pd.DataFrame, outcome: str, keys: list[str]) -> dict[str, tuple[float, float]]:
    """key -> (share of the total sum of squares, p-value) from one additive model."""
    if frame[outcome].nunique() <= 1 or len(frame) <= len(keys) + 1:
        return {k: (0.0, math.nan) for k in keys}
    formula = f"{outcome} ~ " + " + ".join(f"C(f{i})" for i in range(len(keys)))
    total = float(((frame[outcome] - frame[outcome].mean()) ** 2).sum())
    with warnings.catch_warnings():  # a partly confounded design: the test says what it can
        warnings.simplefilter("ignore")
        model = smf.ols(formula, data=frame).fit()
        if model.df_resid < 1:  # one run per cell (M=1/4/7/8 once each): no residual, no test
            return _saturated(frame, outcome, keys, total)
        table = anova_lm(model, typ=2)
    out = {}
    for i, k in enumerate(keys):
        row = table.loc[f"C(f{i})"]
        share = float(row["sum_sq"]) / total if total > 0 else 0.0
        p = float(row["PR(>F)"]) if not math.isnan(row["PR(>F)"]) else math.nan
        out[k] = (min(1.0, share), p)
    return out


def _frame(rows: Sequence[RunFacts], keys: list[str], outcome: list[float | None]) -> pd.DataFrame:
    data: dict[str, list[Any]] = {f"f{i}": [repr(r.config.get(k)) for r in rows]
                                  for i, k in enumerate(keys)}
    data["y"] = list(outcome)
    return pd.DataFrame(data).dropna()


def attribute(rows: Sequence[RunFacts], outcome: str) -> list[Factor]:
    """`outcome`: "mean", "spread" or "determinism". Factors sorted by `explains`; the runs
    without that outcome (no repeats, no mean) take no part, keys included."""
    measured = [(r, outcome_of(r, outcome)) for r in flags_filled(rows)]
    rows = [r for r, y in measured if y is not None]
    ys: list[float | None] = [y for _, y in measured if y is not None]
    keys = factor_keys(rows)
    if not keys:
        return []
    frame = _frame(rows, keys, ys)
    shares = _anova(frame, "y", keys)
    out = []
    for i, k in enumerate(keys):
        shown = {repr(r.config.get(k)): str(r.config.get(k)) for r in rows}
        groups = frame.groupby(f"f{i}")["y"].mean()
        values = {shown[str(lvl)]: float(v) for lvl, v in groups.items()}
        if outcome == "mean":
            effect = 100.0 * (math.exp(max(values.values()) - min(values.values())) - 1)
        else:
            effect = max(values.values()) - min(values.values())
        p: float | None = shares[k][1]
        name = "/".join([k] + confounded_with(rows, k))
        out.append(Factor(name, sorted({r.config.get(k) for r in rows}, key=level_key), float(effect),
                          None if p is None or math.isnan(p) else float(p), shares[k][0], values))
    return sorted(holm(out), key=lambda f: -f.explains)


def flags_filled(rows: Sequence[RunFacts]) -> list[RunFacts]:
    """The runs with a flag they do not name set off: a key whose every stated value is a bool
    (`deterministic`, `cuda_graphs`) is False where a run's config leaves it out, as the
    collectors leave out a flag that is off."""
    keys = {k for r in rows for k in r.config}
    flags = {k for k in keys if all(isinstance(r.config[k], bool) for r in rows if k in r.config)}
    return [r if flags <= r.config.keys() else
            replace(r, config={**{k: False for k in flags}, **r.config}) for r in rows]


def outcome_of(r: RunFacts, outcome: str) -> float | None:
    """What attribution fits of one run: the log of its mean, its CV, or its identical share."""
    if outcome == "mean":
        return math.log(r.mean) if r.mean and r.mean > 0 else None
    if outcome == "spread":
        return r.cv_pct
    return identical_share(r)


def holm(factors: list[Factor]) -> list[Factor]:
    """Each factor with its p-value corrected across the factors that have one (Holm)."""
    tested = [f for f in factors if f.p_value is not None]
    if not tested:
        return factors
    corrected = multipletests([f.p_value for f in tested], method="holm")[1]
    by_key = {f.key: float(p) for f, p in zip(tested, corrected, strict=True)}
    return [dataclasses.replace(f, p_corrected=by_key.get(f.key)) for f in factors]


def level_key(v: Any) -> tuple:
    """A key's levels in order: numbers by value, then everything else by its text."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, float(v), "")
    return (1, 0.0, repr(v))


def identical_share(r: RunFacts) -> float | None:
    """The share of a run's repeats, the reference (first) repeat left out, whose digest equals
    the reference's."""
    if not r.repeats or r.repeats < 2 or r.identical is None:
        return None
    return max(0, r.identical - 1) / (r.repeats - 1)


def finding(outcome: str, factors: Sequence[Factor], metric: str = "tok_s",
            alpha: float = 0.05) -> str:
    """One plain sentence: what follows which key, and which keys explain nothing (p: Holm-
    corrected across the keys)."""
    if not factors:
        return "the runs do not differ in any config key"
    what, verb = {"mean": (f"{metric} run means", "follow"),
                  "spread": (f"{metric} trial spread", "follows"),
                  "determinism": ("non-identical repeats", "follow")}[outcome]
    top = [f for f in factors if f.p_corrected is not None and f.p_corrected < alpha]
    none = [f for f in factors if f not in top]
    if all(f.p_value is None for f in factors):
        return (f"the runs leave no room for a test of the {what} (as many groups as runs): "
                + ", ".join(f"{f.key} explains {100 * f.explains:.0f}%" for f in factors))
    if not top:
        return (f"no config key explains the {what} (none significant at {alpha} after Holm's "
                "correction across keys)")
    lead = top[0]
    if outcome == "determinism":
        worst = min(lead.level_values.items(), key=lambda kv: kv[1])
        head = (f"non-identical repeats follow {lead.key} (explains {100 * lead.explains:.0f}%, "
                f"p={lead.p_corrected:.2g}; least identical at {lead.key}={worst[0]}: "
                f"{100 * worst[1]:.0f}% of repeats)")
    else:
        head = (f"the {what} {verb} {lead.key} (explains {100 * lead.explains:.0f}%, "
                f"p={lead.p_corrected:.2g}, level means differ by {lead.effect:.1f}"
                f"{'%' if outcome == 'mean' else ' CV points'})")
    rest = [f"{f.key} ({100 * f.explains:.0f}%)" for f in top[1:]]
    tail = f"; also {', '.join(rest)}" if rest else ""
    quiet = "; " + ", ".join(f"{f.key} explains {100 * f.explains:.0f}% (p="
                             f"{'-' if f.p_corrected is None else format(f.p_corrected, '.2g')})"
                             for f in none) if none else ""
    return head + tail + quiet


def _saturated(frame: pd.DataFrame, outcome: str, keys: list[str], total: float
               ) -> dict[str, tuple[float, float]]:
    """Shares without p-values where the model leaves no residual degrees of freedom: each key's
    type-2 sum of squares as the residual it leaves when dropped from the additive model."""
    def ssr(terms: list[str]) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(smf.ols(f"{outcome} ~ " + (" + ".join(terms) or "1"), data=frame).fit().ssr)

    terms = [f"C(f{i})" for i in range(len(keys))]
    full = ssr(terms)
    return {k: (min(1.0, max(0.0, (ssr(terms[:i] + terms[i + 1:]) - full) / total))
                if total > 0 else 0.0, math.nan) for i, k in enumerate(keys)}
