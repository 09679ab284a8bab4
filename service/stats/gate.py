"""The gate's decision over many comparisons (metric x series). Pure: the use case gathers the
samples in one pass (service/usecases/verdicts.py) and hands them here once."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import false_discovery_control

from .assess import Assessment, Side, assess, decide, side

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


def judge(comparisons: Sequence[Comparison], alpha: float = 0.05,
          assessor: Callable[[Comparison], Assessment] | None = None) -> Judgement:
    """Every comparison assessed (runs against runs, or `assessor`, e.g. interleaved blocks),
    p-values corrected together (Benjamini-Hochberg), verdicts decided at `alpha`."""
    assessed: list[tuple[Comparison, Assessment | None]] = []
    for c in comparisons:
        if not c.candidate:
            continue
        if not c.baseline:
            a = None
        elif assessor is not None and not c.exact:
            a = assessor(c)
        else:
            a = assess(c.baseline, c.candidate, c.direction, c.exact)
        assessed.append((c, a))
    tested = [a for _, a in assessed if a is not None and a.p_value is not None]
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
        p_adj = adjusted.get(id(a))
        verdict, reason = decide(a, c.threshold_pct, p_adj, alpha)
        results.append(MetricResult(c, a.baseline, a.candidate, a, verdict, reason, p_adj,
                                    a.method))
    return Judgement(overall([r.verdict for r in results]), results, len(tested))
