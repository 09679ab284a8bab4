"""The gate and the compare view: gather every row they need in one pass, then hand the numbers
to the pure statistics (service/stats/gate.py) once."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from collectors.metrics import UNKNOWN_THRESHOLD_PCT, lookup
from collectors.traces.diff import diff_summaries

from ..errors import Invalid, NotFound
from ..models import Run, Series
from ..repositories import runs as runs_repo
from ..schemas import (
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
from ..stats.assess import Side
from ..stats.gate import Comparison, Judgement, MetricResult, judge
from . import baselines


@dataclass(frozen=True)
class MetricDefinition:
    unit: str
    direction: str
    threshold_pct: float
    exact: bool
    gated: bool


def metric_definitions(session: Session, names: list[str]) -> dict[str, MetricDefinition]:
    """The registry module for known metrics, the registry table for ones registered at ingest."""
    out = {}
    registered = runs_repo.registered_metrics(session, names)
    for n in names:
        spec = lookup(n)
        if spec is not None:
            out[n] = MetricDefinition(spec.unit, spec.direction, spec.threshold_pct, spec.exact,
                                      spec.gated)
        elif n in registered:
            r = registered[n]
            out[n] = MetricDefinition(r.unit, r.direction, r.threshold_pct, r.exact, r.gated)
    return out


def count_once(ids: list[int], keys: dict[int, tuple[int, int, str]],
               exclude: set[str] | None = None) -> list[int]:
    """Each record once: runs with the same body (a retried post, a re-ingested file) count as
    the first of them; runs whose body is in `exclude` are dropped."""
    seen = set(exclude or ())
    out = []
    for i in ids:
        h = keys[i][2]
        if h in seen:
            continue
        seen.add(h)
        out.append(i)
    return out


@dataclass
class _Gathered:
    base_ids: list[int]
    cand_ids: list[int]
    keys: dict[int, tuple[int, int, str]]
    series: dict[int, Series]
    samples: dict[int, dict[str, list[float]]]
    comparisons: list[Comparison]


def _series_desc(s: Series) -> dict[str, Any]:
    return {**s.config, "gpu": s.gpu, "gpu_count": s.gpu_count}


def _nearest(cand: Series, base: list[Series], vary: list[str]) -> str:
    """Which keys set a candidate series apart from the nearest baseline series (spec/api.md
    v1.2 item 9): ": no baseline run with tp=4; the baseline has tp=8"."""
    if not base:
        return ""
    mine = {k: v for k, v in _series_desc(cand).items() if k not in vary}

    def differing(b: Series) -> list[str]:
        theirs = {k: v for k, v in _series_desc(b).items() if k not in vary}
        return sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))

    near = min(base, key=lambda b: (len(differing(b)), b.id))
    theirs = _series_desc(near)
    keys = differing(near)

    def show(cfg: dict[str, Any]) -> str:
        return ", ".join(f"{k}={cfg[k]}" if k in cfg else f"no {k}" for k in keys)

    return f": no baseline run with {show(mine)}; the baseline has {show(theirs)}"


def _gather(session: Session, req: GateIn) -> _Gathered:
    if req.benchmark is None or req.baseline is None or not req.run_ids:
        raise Invalid("give benchmark, baseline and run_ids", "body")
    bench_id = runs_repo.benchmark_id(session, req.benchmark)
    if bench_id is None:
        raise NotFound(f"benchmark {req.benchmark!r} not found", "benchmark")
    base_ref_ids = baselines.resolve(session, bench_id, req.benchmark, req.baseline)
    asked = list(dict.fromkeys(req.run_ids))
    keys = runs_repo.run_keys(session, asked + base_ref_ids)
    for rid in asked:
        if rid not in keys or keys[rid][0] != bench_id:
            raise NotFound(f"run {rid} not found in {req.benchmark}", "run_ids")
    cand_ids = count_once(asked, keys)
    base_ids = count_once(sorted(i for i in base_ref_ids if i in keys), keys,
                          exclude={keys[i][2] for i in asked})
    series = runs_repo.series_rows(session, {keys[i][1] for i in cand_ids + base_ids})
    cand_metrics = runs_repo.metric_names(session, cand_ids)
    if req.metrics:
        unknown = [m for m in req.metrics if m not in cand_metrics]
        if unknown:
            raise Invalid(f"metrics: candidate runs have no metric {unknown[0]!r}", "metrics")
    defs = metric_definitions(session, sorted(set(cand_metrics) | set(req.metrics or [])))
    if req.metrics:
        names = list(dict.fromkeys(req.metrics))
    else:
        names = [m for m in cand_metrics if defs[m].gated if m in defs] + \
            [m for m in cand_metrics if m not in defs]
    samples = runs_repo.samples_of(session, cand_ids + base_ids, names)
    vary = list(dict.fromkeys(req.vary or []))
    thresholds = req.thresholds or {}

    def matching(sid: int) -> tuple[str, str, int]:
        s = series[sid]
        return (runs_repo.canonical({k: v for k, v in s.config.items() if k not in vary}),
                s.gpu, s.gpu_count)

    comparisons = []
    for sid in sorted({keys[i][1] for i in cand_ids}):
        s = series[sid]
        desc = _series_desc(s)
        c_runs = [i for i in cand_ids if keys[i][1] == sid]
        b_runs = [i for i in base_ids if matching(keys[i][1]) == matching(sid)]
        why = None if b_runs else "no baseline run in this series (same config and GPU" + (
            f", ignoring {', '.join(vary)})" if vary else ")") + _nearest(
                s, [series[b] for b in sorted({keys[i][1] for i in base_ids})], vary)
        if vary and b_runs:
            b_series = sorted({keys[i][1] for i in b_runs})
            for key in vary:
                values = [series[b].config.get(key) for b in b_series]
                if len(b_series) > 1:
                    why = (f"the baseline holds several values of {', '.join(vary)} "
                           f"({'; '.join(str(series[b].config.get(k)) for b in b_series for k in vary)}); "
                           "gate one of them with a baseline of its runs")
                desc[key] = {"baseline": values[0], "candidate": s.config.get(key)}
            if len(b_series) > 1:
                b_runs = []
        # an unmatched series is said once, not once per metric
        for name in names if b_runs or not names else names[:1]:
            d = defs.get(name, MetricDefinition("", "higher", UNKNOWN_THRESHOLD_PCT, False, True))
            c_ids = [i for i in c_runs if name in samples.get(i, {})]
            b_ids = [i for i in b_runs if name in samples.get(i, {})]
            cs = [samples[i][name] for i in c_ids]
            bs = [samples[i][name] for i in b_ids]
            comparisons.append(Comparison(
                metric=name, unit=d.unit, direction=d.direction,
                threshold_pct=float(thresholds.get(name, d.threshold_pct)), exact=d.exact,
                series=desc, series_id=sid, baseline=bs, candidate=cs,
                no_baseline_reason=why or (f"baseline runs of this series have no {name}"
                                           if not bs else None),
                baseline_ids=tuple(b_ids), candidate_ids=tuple(c_ids)))
    return _Gathered(base_ids, cand_ids, keys, series, samples, comparisons)


def _side(s: Side) -> SideStats:
    return SideStats(runs=s.runs, n=s.n, mean=s.mean, median=s.median, stdev=s.stdev)


def _metric(r: MetricResult) -> MetricVerdict:
    c, a = r.comparison, r.assessment
    return MetricVerdict(
        name=c.metric, direction=c.direction, unit=c.unit, series=c.series, series_id=c.series_id,
        baseline=_side(r.baseline), candidate=_side(r.candidate),
        delta_pct=a.delta_pct if a else None, ci_low_pct=a.ci_low_pct if a else None,
        ci_high_pct=a.ci_high_pct if a else None, bound_pct=a.bound_pct if a else None,
        p_value=a.p_value if a else None, p_adjusted=r.p_adjusted, threshold_pct=c.threshold_pct,
        verdict=r.verdict, reason=r.reason, method=r.method)


def _gate_out(req: GateIn, g: _Gathered, j: Judgement, alpha: float) -> dict[str, Any]:
    return {"verdict": j.verdict, "benchmark": req.benchmark or "", "baseline": req.baseline or "",
            "baseline_run_ids": sorted(g.base_ids), "candidate_run_ids": g.cand_ids,
            "correction": j.correction, "alpha": alpha, "vary": list(req.vary or []),
            "metrics": [_metric(r) for r in j.metrics]}


def gate(session: Session, req: GateIn, alpha: float = 0.05) -> GateOut:
    """Candidate runs against a baseline, series by series (spec/api.md v1.1, "Gate"), or an
    experiment's arms block by block."""
    if req.experiment is not None:
        from .experiments import judge_experiment

        return judge_experiment(session, req.experiment, req.metrics, req.thresholds, req.vary,
                                alpha, req.max_looks)
    g = _gather(session, req)
    return GateOut(**_gate_out(req, g, judge(g.comparisons, alpha), alpha))


def _brief(r: Run) -> RunBrief:
    return RunBrief(id=r.id, commit=r.commit, branch=r.branch, label=r.label,
                    started_at=runs_repo.utc(r.started_at), hardware=r.hardware, config=r.config,
                    determinism=r.determinism)


def compare(session: Session, req: GateIn, alpha: float = 0.05) -> CompareOut:
    """The gate's answer plus sample distributions, the trace diff, traces and run details."""
    g = _gather(session, req)
    j = judge(g.comparisons, alpha)
    runs = runs_repo.runs_by_id(session, g.base_ids + g.cand_ids)
    dists = [Distribution(
        metric=r.comparison.metric, series=r.comparison.series,
        baseline=[RunSamples(run_id=i, samples=list(v)) for i, v in
                  zip(r.comparison.baseline_ids, r.comparison.baseline)],
        candidate=[RunSamples(run_id=i, samples=list(v)) for i, v in
                   zip(r.comparison.candidate_ids, r.comparison.candidate)])
        for r in j.metrics]
    traces: dict[int, list[TraceBrief]] = {}
    for t in runs_repo.traces_of(session, g.base_ids + g.cand_ids):
        traces.setdefault(t.run_id, []).append(TraceBrief(id=t.id, filename=t.filename,
                                                          sha256=t.sha256))

    def first_summary(ids: list[int]) -> tuple[int | None, dict | None]:
        for i in ids:
            s = runs[i].trace_summary
            if s and s.get("steps"):
                return i, s
        return None, None

    bid, bsum = first_summary(g.base_ids)
    cid, csum = first_summary(g.cand_ids)
    trace_diff = None
    if bsum and csum:
        trace_diff = {**diff_summaries(bsum, csum), "base_run_id": bid, "candidate_run_id": cid}
    return CompareOut(**_gate_out(req, g, j, alpha), distributions=dists, trace_diff=trace_diff,
                      traces=traces, baseline_runs=[_brief(runs[i]) for i in sorted(g.base_ids)],
                      candidate_runs=[_brief(runs[i]) for i in g.cand_ids])
