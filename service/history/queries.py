"""History queries: a series' per-run figures (one branch's history by the history rule of
runs/queries_filter.py), and what the incremental alert evaluation reads and keeps (the runs not yet
evaluated, the stored state per series and metric)."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.orm import Session, aliased

from ..runs.queries_filter import filter_runs
from ..runs.tables import Run, RunMetric
from .tables import PendingEvaluation, SeriesState


def history_rows(session: Session, bench_id: int, metric: str, limit: int, **filters):
    """Per run (newest first): id, series, time, commit, label, branch, body hash and the
    metric's n/mean/median/stdev (indexed query on run_metrics; samples are not read)."""
    q = (select(Run.id, Run.series_id, Run.started_at, Run.commit, Run.label, Run.branch,
                Run.body_sha256, Run.experiment_id, RunMetric.n, RunMetric.mean, RunMetric.median,
                RunMetric.stdev)
         .join(RunMetric, RunMetric.run_id == Run.id)
         .where(Run.benchmark_id == bench_id, RunMetric.metric == metric))
    q = filter_runs(q, **filters)
    return session.execute(q.order_by(Run.started_at.desc(), Run.id.desc()).limit(limit)).all()


def every_history_row(session: Session, bench_id: int, metric: str, page: int, **filters) -> list:
    """history_rows for every run that matches, newest first, read in pages of `page` runs
    (keyset on time and id), so no history is cut short and no statement holds it all."""
    out: list = []
    after = None
    while True:
        q = (select(Run.id, Run.series_id, Run.started_at, Run.commit, Run.label, Run.branch,
                    Run.body_sha256, Run.experiment_id, RunMetric.n, RunMetric.mean,
                    RunMetric.median, RunMetric.stdev)
             .join(RunMetric, RunMetric.run_id == Run.id)
             .where(Run.benchmark_id == bench_id, RunMetric.metric == metric))
        if after is not None:
            q = q.where(or_(Run.started_at < after[0],
                            and_(Run.started_at == after[0], Run.id < after[1])))
        rows = session.execute(filter_runs(q, **filters)
                               .order_by(Run.started_at.desc(), Run.id.desc()).limit(page)).all()
        out += rows
        if len(rows) < page:
            return out
        after = (rows[-1].started_at, rows[-1].id)


def history_means(session: Session, bench_id: int, metric: str, branch: str | None) -> list:
    """(series_id, id, body_sha256, mean) of every run of one branch's history (None: every
    branch), oldest first: the few columns the change points read, as plain tuples of one
    statement (a server-side cursor would make PostgreSQL plan for the first rows, not all)."""
    q = (select(Run.series_id, Run.id, Run.body_sha256, RunMetric.mean)
         .join(RunMetric, RunMetric.run_id == Run.id)
         .where(Run.benchmark_id == bench_id, RunMetric.metric == metric))
    q = filter_runs(q, history_branch=branch).order_by(Run.started_at, Run.id)
    return list(session.connection().execute(q).tuples())


def run_marks(session: Session, ids: list[int]) -> dict[int, tuple[datetime, str | None]]:
    """Start time and commit of these runs."""
    if not ids:
        return {}
    rows = session.execute(select(Run.id, Run.started_at, Run.commit)
                           .where(Run.id.in_(sorted(set(ids)))))
    return {i: (t, c) for i, t, c in rows}


def recent_means(session: Session, bench_id: int, pairs: Iterable[tuple[int, str]], branch: str,
                 exclude: Iterable[int], limit: int,
                 since: dict[tuple[int, str], datetime] | None = None
                 ) -> dict[tuple[int, str], list[float]]:
    """For each (series, metric) pair, the run means of the newest `limit` runs of that series'
    `branch` history (the history rule), leaving out the runs in `exclude` and counting a record
    posted twice as its first post; oldest first. One statement for every pair (a window
    function ranks each pair's runs). `since`: a pair's history starts at that time (an expected
    change point moved its level there)."""
    wanted = set(pairs)
    if not wanted:
        return {}
    earlier = aliased(Run)
    reposted = (select(earlier.id).where(earlier.benchmark_id == Run.benchmark_id,
                                         earlier.body_sha256 == Run.body_sha256,
                                         earlier.id < Run.id).exists())
    rank = func.row_number().over(partition_by=(Run.series_id, RunMetric.metric),
                                  order_by=(Run.started_at.desc(), Run.id.desc())).label("rank")
    q = (select(Run.series_id, RunMetric.metric, Run.started_at, Run.id, RunMetric.mean, rank)
         .join(RunMetric, RunMetric.run_id == Run.id)
         .where(Run.benchmark_id == bench_id, Run.series_id.in_(sorted({s for s, _ in wanted})),
                RunMetric.metric.in_(sorted({m for _, m in wanted})), ~reposted))
    left_out = sorted(set(exclude))
    if left_out:
        q = q.where(Run.id.not_in(left_out))
    ranked = filter_runs(q, history_branch=branch).subquery()
    rows = session.execute(select(ranked.c.series_id, ranked.c.metric, ranked.c.mean,
                                  ranked.c.started_at)
                           .where(ranked.c.rank <= limit)
                           .order_by(ranked.c.series_id, ranked.c.metric, ranked.c.started_at,
                                     ranked.c.id)).all()
    out: dict[tuple[int, str], list[float]] = {p: [] for p in wanted}
    since = since or {}
    for sid, metric, mean, started in rows:
        start = since.get((sid, metric))
        if start is not None and _aware(started) < _aware(start):
            continue
        if (sid, metric) in out:
            out[(sid, metric)].append(float(mean))
    return out


def _aware(t: datetime) -> datetime:
    """SQLite hands back naive times (stored as UTC)."""
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def unit_of(session: Session, bench_id: int, metric: str) -> str:
    """The metric's unit in the benchmark (the registry keeps one unit per metric name)."""
    return session.scalar(select(RunMetric.unit).join(Run, Run.id == RunMetric.run_id)
                          .where(Run.benchmark_id == bench_id, RunMetric.metric == metric)
                          .limit(1)) or ""




# --- incremental alert evaluation ----------------------------------------------------------

def take_pending(session: Session, bench_id: int, limit: int) -> list[int]:
    """The oldest `limit` runs of the benchmark not yet evaluated, taken off the inbox (a
    concurrent evaluation of the same benchmark waits on these rows, then finds them gone)."""
    oldest = (select(PendingEvaluation.run_id).where(PendingEvaluation.benchmark_id == bench_id)
              .order_by(PendingEvaluation.run_id).limit(limit))
    return sorted(session.scalars(delete(PendingEvaluation)
                                  .where(PendingEvaluation.benchmark_id == bench_id,
                                         PendingEvaluation.run_id.in_(oldest.scalar_subquery()))
                                  .returning(PendingEvaluation.run_id)))


def series_metrics(session: Session, series_id: int) -> list[str]:
    """The metrics any run of the series holds."""
    return sorted(session.scalars(select(RunMetric.metric).join(Run, Run.id == RunMetric.run_id)
                                  .where(Run.series_id == series_id).distinct()))


def take_series_pending(session: Session, bench_id: int, series_ids: list[int]) -> list[int]:
    """Every run of the series still in the benchmark's inbox, taken off it; on PostgreSQL
    those another evaluation is taking this moment are skipped, not waited for (it judges them
    once it holds the series, after this transaction: waiting here, which holds the series,
    would be a deadlock)."""
    free = (select(PendingEvaluation.id).join(Run, Run.id == PendingEvaluation.run_id)
            .where(PendingEvaluation.benchmark_id == bench_id, Run.series_id.in_(series_ids))
            .with_for_update(of=PendingEvaluation, skip_locked=True))
    return sorted(session.scalars(delete(PendingEvaluation)
                                  .where(PendingEvaluation.id.in_(free.scalar_subquery()))
                                  .returning(PendingEvaluation.run_id)))


def new_history_rows(session: Session, bench_id: int, run_ids: list[int], metrics: list[str],
                     branch: str) -> list:
    """Of `run_ids`, the runs in `branch`'s history: id, series, time, body hash, metric, mean."""
    out: list = []
    for i in range(0, len(run_ids), 1000):
        q = (select(Run.id, Run.series_id, Run.started_at, Run.body_sha256, RunMetric.metric,
                    RunMetric.mean)
             .join(RunMetric, RunMetric.run_id == Run.id)
             .where(Run.benchmark_id == bench_id, Run.id.in_(run_ids[i:i + 1000]),
                    RunMetric.metric.in_(metrics)))
        out += session.execute(filter_runs(q, history_branch=branch)).all()
    return out


def first_posts(session: Session, bench_id: int, hashes: Iterable[str]) -> dict[str, int]:
    """Body hash -> the lowest run id with that body in the benchmark (a record posted twice
    counts as its first post)."""
    keys = sorted(set(hashes))
    out: dict[str, int] = {}
    for i in range(0, len(keys), 1000):
        out.update(session.execute(select(Run.body_sha256, func.min(Run.id))
                                   .where(Run.benchmark_id == bench_id,
                                          Run.body_sha256.in_(keys[i:i + 1000]))
                                   .group_by(Run.body_sha256)).tuples().all())
    return out


def states(session: Session, series_ids: set[int], metrics: list[str]
           ) -> dict[tuple[int, str], SeriesState]:
    if not series_ids:
        return {}
    rows = session.scalars(select(SeriesState).where(SeriesState.series_id.in_(series_ids),
                                                     SeriesState.metric.in_(metrics)))
    return {(s.series_id, s.metric): s for s in rows}


def save_state(session: Session, series_id: int, metric: str, branch: str,
               reference: float | None, window: list, start_run: int, runs: int) -> None:
    row = session.get(SeriesState, (series_id, metric))
    if row is None:
        row = SeriesState(series_id=series_id, metric=metric)
        session.add(row)
    row.branch, row.reference, row.window, row.runs = branch, reference, window, runs
    row.start_run = start_run
    row.updated_at = datetime.now(timezone.utc)


def commits_of(session: Session, run_ids: list[int]) -> dict[int, str | None]:
    return dict(session.execute(select(Run.id, Run.commit).where(Run.id.in_(run_ids))).tuples().all())
