"""Reads for the dashboard's pages at 100k runs: each an indexed query with a bounded row count
(never a benchmark's whole history). Repositories never commit."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select, true
from sqlalchemy.orm import Session

from ..models import Run, RunMetric, Series
from .runs import filter_runs


def latest_runs_per_series(session: Session, bench_id: int, series_ids: set[int],
                           history_branch: str | None = None) -> list[Any]:
    """(id, series_id) of the newest run of each series (of one branch's history): one
    LIMIT 1 walk down ix_runs_series_started per series, so the cost follows the series count,
    not the history's length."""
    out = []
    for sid in sorted(series_ids):
        q = filter_runs(select(Run.id, Run.series_id).where(Run.benchmark_id == bench_id,
                                                            Run.series_id == sid),
                        history_branch=history_branch)
        row = session.execute(q.order_by(Run.started_at.desc(), Run.id.desc()).limit(1)).first()
        if row is not None:
            out.append(row)
    return out


def recent_runs(session: Session, bench_id: int, limit: int, metric: str,
                series_id: int | None = None) -> list[Any]:
    """The newest `limit` runs of the benchmark (ix_runs_benchmark_started), or of one of its
    series (ix_runs_series_started), with their config and the metric's mean (None where a run
    lacks it)."""
    where = [Run.benchmark_id == bench_id] + ([Run.series_id == series_id] if series_id else [])
    ids = select(Run.id).where(*where) \
        .order_by(Run.started_at.desc(), Run.id.desc()).limit(limit).subquery()
    q = (select(Run.id, Run.started_at, Run.label, Run.commit, Run.branch, Run.config,
                RunMetric.mean)
         .join(ids, ids.c.id == Run.id)
         .join(RunMetric, (RunMetric.run_id == Run.id) & (RunMetric.metric == metric),
               isouter=True)
         .order_by(Run.started_at.desc(), Run.id.desc()))
    return list(session.execute(q))


def newest_per_series(session: Session, bench_id: int, metric: str, per_series: int,
                      **filters: Any) -> list[Any]:
    """The newest `per_series` runs of every series of the benchmark with the metric's figures
    (the columns of runs.history_rows), newest first within a series. PostgreSQL: one LATERAL
    query walking ix_runs_series_started per series; elsewhere one such query per series."""
    cols = (Run.id, Run.series_id, Run.started_at, Run.commit, Run.label, Run.branch,
            Run.body_sha256, Run.experiment_id, RunMetric.n, RunMetric.mean, RunMetric.median,
            RunMetric.stdev)
    order = (Run.started_at.desc(), Run.id.desc())

    def newest(series_id):
        q = select(*cols).join(RunMetric, RunMetric.run_id == Run.id).where(
            Run.benchmark_id == bench_id, Run.series_id == series_id, RunMetric.metric == metric)
        return filter_runs(q, **filters).order_by(*order).limit(per_series)

    if session.get_bind().dialect.name == "postgresql":
        ser = select(Series.id).where(Series.benchmark_id == bench_id).subquery()
        inner = newest(ser.c.id).lateral()
        return list(session.execute(select(inner).select_from(ser).join(inner, true())))
    out: list[Any] = []
    for (sid,) in session.execute(select(Series.id).where(Series.benchmark_id == bench_id)):
        out += session.execute(newest(sid)).all()
    return out
