"""A benchmark's history: per-run figures by series, change points (ruptures) and noise."""
from __future__ import annotations

import math

import numpy as np
import ruptures
from scipy import stats
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..errors import ApiError
from ..models import Run, RunMetric, Series
from ..registry import UNKNOWN_THRESHOLD_PCT, builtin
from ..repositories.runs import benchmark, filter_runs, utc


def series_history(session: Session, bench_name: str, metric: str, series_id: int | None = None,
                   limit: int = 5000, since=None, until=None, branch: str | None = None,
                   label: str | None = None) -> list[dict]:
    """Per series: runs in time order with the metric's n/mean/median/stdev (indexed query on
    run_metrics; the samples table is not read)."""
    bench = benchmark(session, bench_name)
    if bench is None:
        raise ApiError(404, "not_found", f"benchmark {bench_name!r} not found", "benchmark")
    q = (select(Run.id, Run.series_id, Run.started_at, Run.commit, Run.label, Run.branch,
                RunMetric.n, RunMetric.mean, RunMetric.median, RunMetric.stdev)
         .join(RunMetric, RunMetric.run_id == Run.id)
         .where(Run.benchmark_id == bench.id, RunMetric.metric == metric))
    q = filter_runs(q, label=label, branch=branch, series_id=series_id, since=since, until=until)
    rows = session.execute(q.order_by(Run.started_at.desc(), Run.id.desc()).limit(limit)).all()
    series = {s.id: s for s in session.scalars(select(Series).where(
        Series.id.in_({r.series_id for r in rows})))}
    out: dict[int, dict] = {}
    for r in reversed(rows):
        s = series[r.series_id]
        entry = out.setdefault(r.series_id, {"series_id": s.id, "config": s.config, "gpu": s.gpu,
                                             "gpu_count": s.gpu_count, "runs": []})
        entry["runs"].append({"id": r.id, "started_at": utc(r.started_at), "commit": r.commit,
                              "label": r.label, "branch": r.branch, "n": r.n, "mean": r.mean,
                              "median": r.median, "stdev": r.stdev})
    return list(out.values())


def change_points(values: list[float], threshold_pct: float, penalty: float | None = None
                  ) -> list[dict]:
    """Change points in a series of run means with ruptures (PELT, L2 cost) on a robustly
    scaled signal; a shift smaller than the metric's threshold is not reported."""
    n = len(values)
    if n < 6:
        return []
    x = np.asarray(values, dtype=float)
    diffs = np.abs(np.diff(x))
    scale = 1.4826 * float(np.median(diffs)) / math.sqrt(2) if diffs.size else 0.0
    if scale <= 0:
        scale = float(np.std(x)) or 1.0
    z = (x - np.median(x)) / scale
    pen = penalty if penalty is not None else 3.0 * math.log(n)
    # ruptures' kernel change-point detection with the linear kernel is PELT on the L2 cost,
    # computed in C (the pure-Python Pelt takes minutes on a few thousand runs)
    bkps = [int(b) for b in ruptures.KernelCPD(kernel="linear", min_size=2)
            .fit(z.reshape(-1, 1)).predict(pen=pen)]
    out, start = [], 0
    cuts = [b for b in bkps if b < n]
    for i, b in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else n
        before, after = x[start:b], x[b:end]
        mb, ma = float(np.mean(before)), float(np.mean(after))
        delta = 100.0 * (ma - mb) / mb if mb else 0.0
        if abs(delta) >= threshold_pct:
            out.append({"index": b, "before_mean": mb, "after_mean": ma, "delta_pct": delta})
        start = b
    return out


def metric_threshold(metric: str) -> float:
    b = builtin(metric)
    return b.threshold_pct if b and b.threshold_pct > 0 else UNKNOWN_THRESHOLD_PCT


def changepoints(session: Session, bench_name: str, metric: str) -> list[dict]:
    thr = metric_threshold(metric)
    out = []
    for s in series_history(session, bench_name, metric):
        runs = s["runs"]
        cps = change_points([r["mean"] for r in runs], thr)
        out.append({"series_id": s["series_id"], "config": s["config"], "gpu": s["gpu"],
                    "gpu_count": s["gpu_count"],
                    "change_points": [{**c, "run_id": runs[c["index"]]["id"],
                                       "started_at": runs[c["index"]]["started_at"],
                                       "commit": runs[c["index"]]["commit"]} for c in cps]})
    return out


def noise(session: Session, bench_name: str, metric: str = "tok_s", alpha: float = 0.05,
          power: float = 0.8) -> list[dict]:
    """Run-to-run and trial-to-trial spread per series, and the smallest change the current
    numbers of runs and trials can detect (one candidate run against the history)."""
    out = []
    for s in series_history(session, bench_name, metric):
        runs = [r for r in s["runs"] if r["n"] >= 1]
        k = len(runs)
        means = np.array([r["mean"] for r in runs])
        center = float(np.mean(means)) if k else None
        within = [r["stdev"] for r in runs if r["stdev"] is not None]
        trials = int(np.median([r["n"] for r in runs])) if runs else 0
        row = {"series_id": s["series_id"], "config": s["config"], "gpu": s["gpu"], "runs": k,
               "trials_per_run": trials, "mean": center,
               "run_to_run_cv_pct": None, "trial_cv_pct": None, "block_cv_pct": None,
               "min_detectable_pct": None, "min_detectable_pct_pooled": None}
        if within and center:
            row["trial_cv_pct"] = 100.0 * float(np.sqrt(np.mean(np.square(within)))) / center
        if k >= 3 and center:
            sd = float(means.std(ddof=1))
            row["run_to_run_cv_pct"] = 100.0 * sd / center
            half = k // 2
            if half >= 2:
                blocks = np.array([means[:half].mean(), means[half:2 * half].mean()])
                row["block_cv_pct"] = 100.0 * float(blocks.std(ddof=1)) / center
            t = stats.t.ppf(1 - alpha / 2, k - 1) + stats.norm.ppf(power)
            row["min_detectable_pct"] = float(t * row["run_to_run_cv_pct"] * math.sqrt(1 + 1 / k))
            row["min_detectable_pct_pooled"] = float(t * row["run_to_run_cv_pct"]
                                                     * math.sqrt(2 / k))
        out.append(row)
    return out
