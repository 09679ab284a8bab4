"""The gate and the compare view: the comparisons use case builds the comparisons, the pure
statistics judge them once (service/stats/gate.py), and the answer is made here, one typed object
per step: route -> comparisons.build -> stats judge -> GateOut / CompareOut."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collectors.traces.diff import diff_summaries
from collectors.traces.summary import valid as valid_summary

from ..curations import marks as curations
from ..db import Session
from ..explain import causes
from ..runs import queries as runs_repo
from ..stats.assess import Side
from ..stats.gate import Judgement, MetricResult
from . import comparisons, noisecards
from .comparisons import Comparisons, Selection
from .schemas import (
    CompareOut,
    Distribution,
    GateIn,
    GateOut,
    MetricVerdict,
    RunBrief,
    RunSamples,
    SideStats,
    TraceBrief,
)

if TYPE_CHECKING:
    from ..runs.tables import Run


def _side(s: Side) -> SideStats:
    return SideStats(runs=s.runs, n=s.n, mean=s.mean, median=s.median, stdev=s.stdev)


def metric_out(r: MetricResult) -> MetricVerdict:
    """One judged comparison as the API answers it."""
    c, a = r.comparison, r.assessment
    return MetricVerdict(
        name=c.metric, direction=c.direction, unit=c.unit, series=c.series, series_id=c.series_id,
        baseline=_side(r.baseline), candidate=_side(r.candidate),
        delta_pct=a.delta_pct if a else None, ci_low_pct=a.ci_low_pct if a else None,
        ci_high_pct=a.ci_high_pct if a else None, bound_pct=a.bound_pct if a else None,
        p_value=a.p_value if a else None, p_adjusted=r.p_adjusted, threshold_pct=c.threshold_pct,
        verdict=r.verdict, reason=r.reason, method=r.method, role=c.role,
        spread_from=a.spread_from if a else None, spread_runs=a.spread_runs if a else None,
        muted=c.muted)


def _gate_out(session: Session, c: Comparisons, j: Judgement, runs: dict[int, Run]
              ) -> dict[str, Any]:
    correction = j.correction + (f"; each of {c.looks} looks at alpha/{c.looks}"
                                 if c.looks > 1 else "")
    evidence = causes.trace_evidence(j, runs, c.level)
    return {"verdict": j.verdict, "benchmark": c.benchmark, "baseline": c.baseline,
            "baseline_run_ids": c.baseline_ids, "candidate_run_ids": c.candidate_ids,
            "correction": correction, "alpha": c.alpha, "looks": c.looks, "vary": c.vary,
            "metrics": [metric_out(r) for r in j.metrics], "trace_evidence": evidence,
            "cause": causes.cause(j, runs, evidence, c.vary),
            "curations": curations.of_series(session, {m.comparison.series_id for m in j.metrics
                                                       if m.comparison.series_id is not None})}


def gate(session: Session, req: GateIn, alpha: float = 0.05) -> GateOut:
    """Candidate runs against a baseline, series by series (spec/api.md, "Gate"), or an
    experiment's arms block by block at alpha / looks; with the traces' evidence and, for a
    verdict that did not pass, its cause."""
    c = comparisons.build(session, Selection.of(req, alpha))
    runs = runs_repo.runs_by_id(session, c.baseline_ids + c.candidate_ids)
    return GateOut(**_gate_out(session, c, comparisons.judged(c), runs))


def _brief(r: Run) -> RunBrief:
    return RunBrief(id=r.id, commit=r.commit, branch=r.branch, label=r.label,
                    started_at=runs_repo.utc(r.started_at), hardware=r.hardware, config=r.config,
                    determinism=r.determinism)


def compare(session: Session, req: GateIn, alpha: float = 0.05) -> CompareOut:
    """The gate's answer plus sample distributions, the trace diff, traces and run details."""
    g = comparisons.build(session, Selection.of(req, alpha))
    j = comparisons.judged(g)
    runs = runs_repo.runs_by_id(session, g.baseline_ids + g.candidate_ids)
    dists = [Distribution(
        metric=r.comparison.metric, series=r.comparison.series,
        baseline=[RunSamples(run_id=i, samples=list(v)) for i, v in
                  zip(r.comparison.baseline_ids, r.comparison.baseline)],
        candidate=[RunSamples(run_id=i, samples=list(v)) for i, v in
                   zip(r.comparison.candidate_ids, r.comparison.candidate)])
        for r in j.metrics]
    traces: dict[int, list[TraceBrief]] = {}
    for t in runs_repo.traces_of(session, g.baseline_ids + g.candidate_ids):
        traces.setdefault(t.run_id, []).append(TraceBrief(id=t.id, filename=t.filename,
                                                          sha256=t.sha256))

    def first_summary(ids: list[int]) -> tuple[int | None, dict | None]:
        for i in ids:
            s = valid_summary(runs[i].trace_summary)[0]  # a malformed field is left out
            if s and s.get("steps"):
                return i, s
        return None, None

    bid, bsum = first_summary(g.baseline_ids)
    cid, csum = first_summary(g.candidate_ids)
    trace_diff = None
    if bsum and csum:
        try:
            trace_diff = {**diff_summaries(bsum, csum), "base_run_id": bid,
                          "candidate_run_id": cid}
        except (KeyError, TypeError, ValueError):  # a stored summary missing what a diff reads
            trace_diff = None
    return CompareOut(**_gate_out(session, g, j, runs), distributions=dists, trace_diff=trace_diff,
                      traces=traces, baseline_runs=[_brief(runs[i]) for i in g.baseline_ids],
                      candidate_runs=[_brief(runs[i]) for i in g.candidate_ids],
                      noise=[] if g.blocked else noisecards.cards(session, g.benchmark, [
                          (r.comparison.series_id, r.comparison.metric) for r in j.metrics
                          if r.comparison.role == "gate" and r.comparison.series_id is not None],
                          g.alpha))
