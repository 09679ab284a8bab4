"""Reads for the dashboard's pages at 100k runs: each an indexed query with a bounded row count
(never a benchmark's whole history). Repositories never commit."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select, true
from sqlalchemy.orm import Session, aliased

from ..baselines.tables import Baseline
from ..curations.tables import Curation
from ..models import Benchmark, BenchmarkCount, Series
from ..runs.queries import counted
from ..runs.queries_filter import filter_runs
from ..runs.tables import Run, RunMetric
from ..traces.tables import TraceFile


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


def overview(session: Session, name: str | None = None) -> list[Any]:
    """Every benchmark (or the one of that name: id, name, default_branch, bisect_command) with
    its run count, newest run time and newest run id (the revision runs.fingerprint gives, kept
    on its row by the triggers on `runs`), newest run first, in one statement of plain rows."""
    c = counted()
    q = select(Benchmark.id, Benchmark.name, Benchmark.default_branch, Benchmark.bisect_command,
               func.coalesce(c.c.runs, 0).label("runs"), c.c.latest.label("latest"),
               c.c.top.label("last_run_id")).join(c, c.c.benchmark_id == Benchmark.id,
                                                  isouter=True)
    if name is not None:
        q = q.where(Benchmark.name == name)
    rows = session.execute(q).all()
    return sorted(rows, key=lambda r: (r.latest is not None, r.latest or datetime.min),
                  reverse=True)


def newest_baselines(session: Session, bench_ids: list[int] | None = None) -> dict[int, Any]:
    """The most recently updated baseline (id, name, run_ids, updated_at) of each benchmark (of
    these, where given)."""
    out: dict[int, Any] = {}
    q = select(Baseline.benchmark_id, Baseline.id, Baseline.name, Baseline.run_ids,
               Baseline.updated_at).order_by(Baseline.updated_at)
    if bench_ids is not None:
        q = q.where(Baseline.benchmark_id.in_(bench_ids))
    for b in session.execute(q):
        out[b.benchmark_id] = b
    return out


def newest_runs(session: Session, bench_ids: list[int] | None = None) -> dict[int, Any]:
    """The newest run (id, label, commit, started_at) of every benchmark (of these, where
    given): one walk down ix_runs_benchmark_started per benchmark, in one statement."""
    inner = aliased(Run)
    newest = (select(inner.id).where(inner.benchmark_id == Benchmark.id)
              .order_by(inner.started_at.desc(), inner.id.desc()).limit(1)
              .correlate(Benchmark).scalar_subquery())
    q = select(Run.benchmark_id, Run.id, Run.label, Run.commit, Run.started_at).join(
        Benchmark, Run.id == newest)
    if bench_ids is not None:
        q = q.where(Benchmark.id.in_(bench_ids))
    rows = session.execute(q)
    return {int(r.benchmark_id): r for r in rows}


def newest_label_runs(session: Session, bench_id: int, skip_labels: set[str], limit: int
                      ) -> tuple[str | None, list[int]]:
    """The newest label of the benchmark's runs (experiment and bisect runs aside) that is not
    in `skip_labels`, and its newest `limit` run ids (ix_runs_benchmark_started)."""
    plain = (Run.benchmark_id == bench_id, Run.label.is_not(None), Run.experiment_id.is_(None),
             Run.bisect_id.is_(None))
    q = select(Run.label).where(*plain)
    if skip_labels:
        q = q.where(Run.label.not_in(sorted(skip_labels)))
    label = session.scalars(q.order_by(Run.started_at.desc(), Run.id.desc()).limit(1)).first()
    if label is None:
        return None, []
    ids = session.scalars(select(Run.id).where(*plain, Run.label == label)
                          .order_by(Run.started_at.desc(), Run.id.desc()).limit(limit))
    return label, sorted(ids)


def newest_experiments_of(session: Session, limit: int) -> dict[int, list[str]]:
    """Per benchmark with experiments: the ids of its newest `limit` (by their newest run), in
    one statement (the experiment index keeps it to the runs that carry one)."""
    newest = func.max(Run.started_at)
    out: dict[int, list[str]] = {}
    for bench_id, exp_id in session.execute(
            select(Run.benchmark_id, Run.experiment_id).where(Run.experiment_id.is_not(None))
            .group_by(Run.benchmark_id, Run.experiment_id)
            .order_by(Run.benchmark_id, newest.desc(), Run.experiment_id)):
        ids = out.setdefault(bench_id, [])
        if len(ids) < limit:
            ids.append(str(exp_id))
    return out


def benchmark_revision(session: Session, bench_id: int, now: datetime) -> tuple[Any, ...]:
    """What a verdict on the benchmark's runs depends on, in one statement: its run count and
    newest run id (kept by the triggers on `runs`), its baselines' count and newest update, its
    trace files and those still pending (their analysis is the verdict's evidence), and its
    curations in force at `now` (a mute that expires changes the verdict with no write)."""
    traces = select(TraceFile.id).join(Run, Run.id == TraceFile.run_id).where(
        Run.benchmark_id == bench_id).subquery()
    pending = select(TraceFile.id).join(Run, Run.id == TraceFile.run_id).where(
        Run.benchmark_id == bench_id, TraceFile.state == "pending").subquery()
    def in_force(column: Any) -> Any:
        return select(column).where(
            Curation.benchmark_id == bench_id, Curation.withdrawn_at.is_(None),
            Curation.expires_at.is_(None) | (Curation.expires_at > now)).scalar_subquery()
    row = session.execute(select(
        select(func.coalesce(func.sum(BenchmarkCount.runs), 0))
        .where(BenchmarkCount.benchmark_id == bench_id).scalar_subquery(),
        select(func.max(BenchmarkCount.top)).where(BenchmarkCount.benchmark_id == bench_id)
        .scalar_subquery(),
        select(func.count(Baseline.id)).where(Baseline.benchmark_id == bench_id)
        .scalar_subquery(),
        select(func.max(Baseline.updated_at)).where(Baseline.benchmark_id == bench_id)
        .scalar_subquery(),
        select(func.count()).select_from(traces).scalar_subquery(),
        select(func.count()).select_from(pending).scalar_subquery(),
        in_force(func.count(Curation.id)), in_force(func.coalesce(func.sum(Curation.id), 0)),
    )).one()
    return tuple(row)


def benchmark_ids(session: Session, names: list[str]) -> dict[str, int]:
    """These benchmarks' ids by name."""
    return {str(n): int(i) for n, i in session.execute(
        select(Benchmark.name, Benchmark.id).where(Benchmark.name.in_(names)))}


def labels_of(session: Session, run_ids: list[int]) -> set[str]:
    """The labels the runs carry."""
    if not run_ids:
        return set()
    return {str(lb) for (lb,) in session.execute(select(Run.label).where(
        Run.id.in_(run_ids), Run.label.is_not(None)).distinct())}
