"""The gate: candidate runs against a named baseline, series by series, metric by metric."""
from __future__ import annotations

from scipy.stats import false_discovery_control
from sqlalchemy import select
from sqlalchemy.orm import Session, noload

from ..errors import ApiError
from ..models import MetricDef, Run, RunMetric, Series
from ..registry import UNKNOWN_THRESHOLD_PCT, builtin
from ..repositories import baselines as baseline_repo
from ..repositories.runs import benchmark_id, samples_of
from ..schemas import GateIn
from .assess import assess, decide, side

CORRECTION = "benjamini-hochberg"


def _metric_defs(session: Session, names: list[str]) -> dict[str, dict]:
    rows = {m.name: m for m in session.scalars(select(MetricDef).where(MetricDef.name.in_(names)))}
    out = {}
    for n in names:
        r = rows.get(n)
        b = builtin(n)
        if r is not None:
            out[n] = {"unit": r.unit, "direction": r.direction, "threshold": r.threshold_pct,
                      "exact": r.exact, "gated": r.gated}
        elif b is not None:
            out[n] = {"unit": b.unit, "direction": b.direction, "threshold": b.threshold_pct,
                      "exact": b.exact, "gated": b.gated}
    return out


def run_gate(session: Session, req: GateIn, alpha: float = 0.05) -> dict:
    bench_id = benchmark_id(session, req.benchmark)
    if bench_id is None:
        raise ApiError(404, "not_found", f"benchmark {req.benchmark!r} not found", "benchmark")
    base_ids, _how = baseline_repo.resolve(session, req.benchmark, req.baseline, bench_id)
    cand_ids = list(dict.fromkeys(req.run_ids))
    runs = {r.id: r for r in session.scalars(select(Run).options(noload(Run.stats))
                                             .where(Run.id.in_(cand_ids + base_ids)))}
    for rid in cand_ids:
        if rid not in runs or runs[rid].benchmark_id != bench_id:
            raise ApiError(404, "not_found", f"run {rid} not found in {req.benchmark}", "run_ids")
    base_ids = [i for i in base_ids if i not in set(cand_ids)]
    series = {s.id: s for s in session.scalars(select(Series).where(
        Series.id.in_({r.series_id for r in runs.values()})))}
    cand_metrics = sorted({m for (m,) in session.execute(
        select(RunMetric.metric).where(RunMetric.run_id.in_(cand_ids)))})
    defs = _metric_defs(session, sorted(set(cand_metrics) | set(req.metrics or [])))
    if req.metrics:
        unknown = [m for m in req.metrics if m not in cand_metrics]
        if unknown:
            raise ApiError(422, "validation_error", f"metrics: candidate runs have no metric "
                           f"{unknown[0]!r}", "metrics")
        names = list(dict.fromkeys(req.metrics))
    else:
        names = [m for m in cand_metrics if defs.get(m, {}).get("gated", True)]
    thresholds = req.thresholds or {}
    samples = samples_of(session, cand_ids + base_ids, names)
    rows, pending = [], []
    cand_series = sorted({runs[i].series_id for i in cand_ids})
    for sid in cand_series:
        s = series[sid]
        s_desc = {**s.config, "gpu": s.gpu, "gpu_count": s.gpu_count}
        c_runs = [i for i in cand_ids if runs[i].series_id == sid]
        b_runs = [i for i in base_ids if i in runs and runs[i].series_id == sid]
        for name in names:
            d = defs.get(name, {"unit": "", "direction": "higher", "threshold": UNKNOWN_THRESHOLD_PCT,
                                "exact": False})
            thr = float(thresholds.get(name, d["threshold"]))
            cs = [samples[i][name] for i in c_runs if name in samples.get(i, {})]
            bs = [samples[i][name] for i in b_runs if name in samples.get(i, {})]
            row = {"name": name, "direction": d["direction"], "unit": d["unit"], "series": s_desc,
                   "series_id": sid,
                   "threshold_pct": thr, "p_adjusted": None}
            if not cs:
                continue
            if not bs:
                why = ("no baseline run in this series (same config and GPU)" if not b_runs
                       else f"baseline runs of this series have no {name}")
                row.update(baseline=side([]), candidate=side(cs), delta_pct=None, ci_low_pct=None,
                           ci_high_pct=None, p_value=None, verdict="inconclusive", reason=why,
                           method="none")
                rows.append(row)
                continue
            a = assess(bs, cs, d["direction"], d["exact"], alpha, thr)
            row.update(baseline=a.baseline, candidate=a.candidate, delta_pct=a.delta_pct,
                       ci_low_pct=a.ci_low_pct, ci_high_pct=a.ci_high_pct, p_value=a.p_value,
                       method=a.method)
            rows.append(row)
            pending.append((row, a, thr))
    tested = [(row, a, thr) for row, a, thr in pending if a.p_value is not None]
    if tested:
        adj = false_discovery_control([a.p_value for _, a, _ in tested], method="bh")
        for (row, _, _), p in zip(tested, adj):
            row["p_adjusted"] = float(p)
    for row, a, thr in pending:
        row["verdict"], row["reason"] = decide(a, thr, row["p_adjusted"], alpha)
    verdicts = {r["verdict"] for r in rows}
    overall = "fail" if "regression" in verdicts else (
        "inconclusive" if "inconclusive" in verdicts or not rows else "pass")
    return {"verdict": overall, "benchmark": req.benchmark, "baseline": req.baseline,
            "baseline_run_ids": sorted(base_ids), "candidate_run_ids": cand_ids,
            "correction": f"{CORRECTION} over {len(tested)} comparison(s)", "alpha": alpha,
            "metrics": rows}
