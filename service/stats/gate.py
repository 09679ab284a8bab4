"""The gate's decision over many comparisons (metric x series). Pure: the use case gathers the
samples in one pass (service/gate/verdicts.py) and hands them here once.

The family of one request is controlled where it decides: each gating comparison's one-sided
test of "past the threshold" (in the direction of its estimate) is corrected with Holm's method
over the request (statsmodels), so comparisons all inside their thresholds make a `regression`
in at most alpha of requests; the p-values against no change keep Benjamini-Hochberg. A pass
needs every gating comparison's own bound within its threshold (an intersection of tests, at
alpha without correction)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy import stats
from scipy.stats import false_discovery_control
from statsmodels.stats.multitest import multipletests

from collectors.verdicts import FAIL, IMPROVEMENT, INCONCLUSIVE, PASS, REGRESSION

from .assess import MIN_BASELINE_RUNS, Assessment, Side, assess, decide, side

CORRECTION = "benjamini-hochberg"
THRESHOLD_CORRECTION = "holm"


@dataclass(frozen=True)
class Comparison:
    """One metric of one series: what the gate is asked to judge."""

    metric: str
    unit: str
    direction: str
    threshold_pct: float
    exact: bool
    series: dict[str, Any]
    series_id: int | None
    baseline: Sequence[Sequence[float]]
    candidate: Sequence[Sequence[float]]
    no_baseline_reason: str | None = None  # set when the baseline side is empty
    baseline_ids: tuple[int, ...] = ()  # the runs behind `baseline` and `candidate`, in order
    candidate_ids: tuple[int, ...] = ()
    role: str = "gate"  # "gate" decides the overall verdict; "evidence" is reported beside it
    # run means of the series' history (the spread of spec/api.md, Few baseline runs)
    history: tuple[float, ...] = ()
    # a person muted this metric of this series (why, by whom, until when): judged and shown,
    # never part of the family or the overall verdict
    muted: str | None = None


@dataclass(frozen=True)
class MetricResult:
    comparison: Comparison
    baseline: Side
    candidate: Side
    assessment: Assessment | None
    verdict: str
    reason: str
    p_adjusted: float | None
    method: str
    p_past: float | None = None  # "past the threshold", adjusted over the request (Holm)


@dataclass(frozen=True)
class Judgement:
    verdict: str  # pass | fail | inconclusive
    metrics: list[MetricResult] = field(default_factory=list)
    tested: int = 0  # comparisons in the Benjamini-Hochberg family

    @property
    def correction(self) -> str:
        return f"{THRESHOLD_CORRECTION} against the thresholds, {CORRECTION} against no change, " \
               f"over {self.tested} comparison(s)"


def overall(verdicts: Sequence[str]) -> str:
    """fail when any metric regressed, else inconclusive when any is (or none was judged)."""
    if REGRESSION in verdicts:
        return FAIL
    if INCONCLUSIVE in verdicts or not verdicts:
        return INCONCLUSIVE
    return PASS


def _evidence(c: Comparison, alpha: float) -> Assessment:
    """An evidence metric: its change always; an interval only when each side has >= 3 runs
    (spec/api.md, Gating and evidence metrics)."""
    a = assess(c.baseline, c.candidate, c.direction, c.exact, alpha,
               candidate_ids=c.candidate_ids)
    if c.exact or (len(c.baseline) >= MIN_BASELINE_RUNS and len(c.candidate) >= MIN_BASELINE_RUNS):
        return a
    b, cs = side(c.baseline), side(c.candidate)
    delta = 100.0 * (cs.mean - b.mean) / abs(b.mean) if b.mean and cs.mean is not None else None
    return Assessment(b, cs, delta, None, None, None, None, "evidence", c.direction == "higher",
                      f"evidence ({len(c.baseline)} vs {len(c.candidate)} runs): the change "
                      "only; an interval needs 3 runs a side", k_runs=len(c.baseline),
                      m_runs=len(c.candidate), runs_known=False)


def p_past(a: Assessment, threshold_pct: float) -> float | None:
    """One-sided p-value of "the change is past the threshold" in the direction of the
    estimate (H0: within it), on the assessment's own scale, t with its df."""
    if a.diff is None or a.se_pct is None or a.df is None:
        return None
    down = a.diff < 0
    frac = threshold_pct / 100.0
    if a.log_scale:
        limit = math.inf if down and frac >= 1 else abs(math.log1p(-frac if down else frac))
    else:
        limit = frac
    se = a.se_pct / 100.0
    if se == 0:
        return 0.0 if abs(a.diff) > limit else 1.0
    return float(stats.t.sf((abs(a.diff) - limit) / se, a.df))


def _confirm(a: Assessment) -> str:
    one = [name for name, n in (("baseline", a.k_runs), ("candidate", a.m_runs)) if n == 1]
    spread = "the series' history" if a.spread_from == "history" else \
        f"the {a.spread_runs} {a.spread_from} runs"
    return f"n=1 ({a.k_runs} vs {a.m_runs} runs, spread from {spread}): " \
           f"{MIN_BASELINE_RUNS - 1} more {' and '.join(one)} runs would confirm it"


def verdict_of(a: Assessment, threshold_pct: float, p_adj: float | None, p_thr: float | None,
               alpha: float) -> tuple[str, str]:
    """decide(), then the rules of the history: a baseline run far outside the series' history
    cannot make a pass or an improvement on its own (the comparison without it must say the
    same, else inconclusive), and a verdict resting on one run a side says n=1 and the runs
    that would confirm it."""
    verdict, reason = decide(a, threshold_pct, p_adj, alpha, p_thr)
    if a.outliers and a.without is not None:
        named = "; ".join(a.outliers)
        w = a.without
        alone, _ = decide(w, threshold_pct, w.p_value, alpha, p_past(w, threshold_pct))
        if verdict in (PASS, IMPROVEMENT) and alone != verdict:
            change = "no change" if w.delta_pct is None else f"{w.delta_pct:+.2f}%"
            reason = (f"the {verdict} rests on a baseline run far outside the series' history, "
                      f"{named}: without it the change is {change} ({alone}); measure the "
                      f"baseline again. {reason}")
            verdict = INCONCLUSIVE
        else:
            reason += f"; a baseline run is far outside the series' history, {named} (the " \
                      f"verdict holds without it)"
    if a.runs_known and a.method != "exact" and min(a.k_runs, a.m_runs) == 1:
        reason = f"{_confirm(a)}; {reason}"
    return verdict, reason


def judge(comparisons: Sequence[Comparison], alpha: float = 0.05,
          assessor: Callable[[Comparison], Assessment] | None = None) -> Judgement:
    """Every comparison assessed (runs against runs, or `assessor`, e.g. interleaved blocks),
    the gating metrics' p-values corrected together (module docstring), verdicts decided at
    `alpha` (the level in use). Evidence metrics get their own unadjusted verdict and never
    change the overall one."""
    assessed: list[tuple[Comparison, Assessment | None]] = []
    for c in comparisons:
        if not c.candidate:
            continue
        if not c.baseline:
            a = None
        elif c.role != "gate" and (assessor is None or len(c.baseline) < MIN_BASELINE_RUNS):
            a = _evidence(c, alpha)
        elif assessor is not None and not c.exact:
            a = assessor(c)
        else:
            a = assess(c.baseline, c.candidate, c.direction, c.exact, alpha, c.history,
                       candidate_ids=c.candidate_ids, threshold_pct=c.threshold_pct,
                       baseline_ids=c.baseline_ids)
        assessed.append((c, a))
    tested = [(c, a) for c, a in assessed if a is not None and a.p_value is not None
              and c.role == "gate" and c.muted is None]
    adjusted: dict[int, float] = {}
    past: dict[int, float] = {}
    if tested:
        adj = false_discovery_control([a.p_value for _, a in tested], method="bh")
        adjusted = {id(a): float(p) for (_, a), p in zip(tested, adj)}
        raw = [(a, p_past(a, c.threshold_pct)) for c, a in tested]
        known = [(a, p) for a, p in raw if p is not None]
        if len(known) == 1:  # a family of one: Holm leaves its p as it is
            past = {id(known[0][0]): float(known[0][1])}
        elif known:
            holm = multipletests([p for _, p in known], alpha=alpha, method="holm")[1]
            past = {id(a): float(p) for (a, _), p in zip(known, holm)}
    results = []
    for c, a in assessed:
        if a is None:
            results.append(MetricResult(c, side([]), side(c.candidate), None, INCONCLUSIVE,
                                        c.no_baseline_reason or "no baseline run in this series",
                                        None, "none"))
            continue
        family = c.role == "gate" and c.muted is None
        p_adj = adjusted.get(id(a)) if family else a.p_value
        p_thr = past.get(id(a)) if family else \
            (p_past(a, c.threshold_pct) if c.role == "gate" else None)
        verdict, reason = verdict_of(a, c.threshold_pct, p_adj, p_thr, alpha)
        if c.muted is not None:
            reason = f"muted, {c.muted}: does not decide; {reason}"
        results.append(MetricResult(c, a.baseline, a.candidate, a, verdict, reason, p_adj,
                                    a.method, p_thr))
    gating = [r.verdict for r in results
              if r.comparison.role == "gate" and r.comparison.muted is None]
    return Judgement(overall(gating), results, len(tested))
