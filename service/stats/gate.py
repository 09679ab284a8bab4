"""The gate's decision over many comparisons (metric x series). Pure: the use case gathers the
samples in one pass (service/usecases/verdicts.py) and hands them here once."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import false_discovery_control

from .assess import MIN_BASELINE_RUNS, Assessment, Side, assess, decide, side

CORRECTION = "benjamini-hochberg"


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


@dataclass(frozen=True)
class Judgement:
    verdict: str  # pass | fail | inconclusive
    metrics: list[MetricResult] = field(default_factory=list)
    tested: int = 0  # comparisons in the Benjamini-Hochberg family

    @property
    def correction(self) -> str:
        return f"{CORRECTION} over {self.tested} comparison(s)"


def overall(verdicts: Sequence[str]) -> str:
    """fail when any metric regressed, else inconclusive when any is (or none was judged)."""
    if "regression" in verdicts:
        return "fail"
    if "inconclusive" in verdicts or not verdicts:
        return "inconclusive"
    return "pass"


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


def judge(comparisons: Sequence[Comparison], alpha: float = 0.05,
          assessor: Callable[[Comparison], Assessment] | None = None) -> Judgement:
    """Every comparison assessed (runs against runs, or `assessor`, e.g. interleaved blocks),
    the gating metrics' p-values corrected together (Benjamini-Hochberg), verdicts decided at
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
                       candidate_ids=c.candidate_ids)
        assessed.append((c, a))
    tested = [a for c, a in assessed if a is not None and a.p_value is not None
              and c.role == "gate"]
    adjusted: dict[int, float] = {}
    if tested:
        adj = false_discovery_control([a.p_value for a in tested], method="bh")
        adjusted = {id(a): float(p) for a, p in zip(tested, adj)}
    results = []
    for c, a in assessed:
        if a is None:
            results.append(MetricResult(c, side([]), side(c.candidate), None, "inconclusive",
                                        c.no_baseline_reason or "no baseline run in this series",
                                        None, "none"))
            continue
        p_adj = adjusted.get(id(a)) if c.role == "gate" else a.p_value
        verdict, reason = decide(a, c.threshold_pct, p_adj, alpha)
        results.append(MetricResult(c, a.baseline, a.candidate, a, verdict, reason, p_adj,
                                    a.method))
    gating = [r.verdict for r in results if r.comparison.role == "gate"]
    return Judgement(overall(gating), results, len(tested))
