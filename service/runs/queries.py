"""Run rows: look-ups, the run list, the JSON of one run, deletion, and the reads the use cases
make of many runs at once (the bulk ingest is runs/queries_ingest.py, history queries
history/queries.py, series rows repositories/series.py). Repositories never commit: the
caller owns the transaction."""
from __future__ import annotations

import json
import weakref
from datetime import datetime, timezone
from typing import Any, NamedTuple

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from collectors.metrics import lookup

from ..baselines.tables import Baseline
from ..errors import NotFound
from ..history.tables import SeriesState
from ..models import Benchmark, BenchmarkCount, MetricDef, Series
from ..traces.tables import TraceFile
from .queries_filter import filter_runs
from .tables import Run, RunMetric, Sample


def utc(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    text = dt.astimezone(timezone.utc).isoformat()[:-6]  # isoformat is C-fast; drop "+00:00"
    if "." in text:  # microseconds without trailing zeros
        text = text.rstrip("0").rstrip(".")
    return text + "Z"


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


_IDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cache(session: Session) -> dict:
    """Per-engine cache of rows that never change once written (benchmark and series ids,
    registered metric definitions): spares the hot ingest path a query each."""
    engine = session.get_bind()
    c = _IDS.get(engine)
    if c is None:
        c = _IDS[engine] = {}
    return c


def benchmark(session: Session, name: str) -> Benchmark | None:
    return session.scalars(select(Benchmark).where(Benchmark.name == name)).first()



def set_benchmark(session: Session, bench_id: int, default_branch: str | None,
                  bisect_command: str | None) -> None:
    """The benchmark's default branch and its alerts' bisect command, those given (not None);
    an empty command clears it."""
    bench = session.get(Benchmark, bench_id)
    assert bench is not None, bench_id
    if default_branch is not None:
        bench.default_branch = default_branch
    if bisect_command is not None:
        bench.bisect_command = bisect_command or None
    session.flush()

def benchmark_id(session: Session, name: str) -> int | None:
    """The id of an existing benchmark (cached once seen), or None."""
    ids = cache(session)
    key = ("benchmark", name)
    if key not in ids:
        found = benchmark(session, name)
        if found is None:
            return None
        ids[key] = found.id
    return ids[key]


def keyed(session: Session, keys: list[str]) -> dict[str, tuple[int, str]]:
    """key -> (run id, body hash) of stored runs with these idempotency keys."""
    out: dict[str, tuple[int, str]] = {}
    for i in range(0, len(keys), 1000):
        for rid, key, body in session.execute(select(Run.id, Run.idempotency_key, Run.body_sha256)
                                              .where(Run.idempotency_key.in_(keys[i:i + 1000]))):
            if key is not None:
                out[key] = (rid, body)
    return out


def find_by_key(session: Session, key: str) -> Run | None:
    return session.scalars(select(Run).where(Run.idempotency_key == key)).first()


def get_run(session: Session, run_id: int) -> Run:
    row = session.get(Run, run_id)
    if row is None:
        raise NotFound(f"run {run_id}")
    return row


def samples_of(session: Session, run_ids: list[int], metrics: list[str] | None = None
               ) -> dict[int, dict[str, list[float]]]:
    q = select(Sample.run_id, Sample.metric, Sample.value).where(Sample.run_id.in_(run_ids)) \
        .order_by(Sample.run_id, Sample.metric, Sample.trial)
    if metrics:
        q = q.where(Sample.metric.in_(metrics))
    out: dict[int, dict[str, list[float]]] = {}
    for rid, metric, value in session.execute(q):
        out.setdefault(rid, {}).setdefault(metric, []).append(value)
    return out


def run_out(session: Session, row: Run, with_samples: bool = True) -> dict:
    samples = samples_of(session, [row.id]).get(row.id, {}) if with_samples else {}
    traces = session.scalars(select(TraceFile).where(TraceFile.run_id == row.id)
                             .order_by(TraceFile.id)).all()
    # the run's trace summary read after its traces: a trace recorded done (in the same commit
    # as the summary) since the run's row was read is never shown without that summary
    summary = session.scalar(select(Run.trace_summary).where(Run.id == row.id)) \
        if with_samples else None
    out = {**(row.extra or {}), "id": row.id, "benchmark": row.benchmark.name,
           "config": row.config, "commit": row.commit, "branch": row.branch, "label": row.label,
           "repository": row.repository, "pr": row.pr, "hardware": row.hardware,
           "environment": row.environment, "started_at": utc(row.started_at),
           "created_at": utc(row.created_at), "series_id": row.series_id,
           "metrics": {s.metric: {"unit": s.unit, "direction": s.direction, "n": s.n,
                                  "mean": s.mean, "median": s.median, "stdev": s.stdev,
                                  **({"samples": samples.get(s.metric, [])} if with_samples else {})}
                       for s in row.stats},
           "determinism": row.determinism,
           **({"bisect": row.bisect} if row.bisect else {}),
           # a stored value that is not a mapping (written by hand, a broken migration) is none
           "trace_summary": summary if isinstance(summary, dict) else None,
           "traces": [{"id": t.id, "filename": t.filename, "sha256": t.sha256,
                       "size_bytes": t.size_bytes, "format": t.format,
                       "state": t.state or "done", "error": t.error,
                       "trace_group": t.trace_group or 0, "phase": t.phase,
                       "group_summary": t.group_summary} for t in traces]}
    return out


def list_runs(session: Session, benchmark_name: str | None = None, label: str | None = None,
              branch: str | None = None, commit: str | None = None, gpu: str | None = None,
              series_id: int | None = None, limit: int = 100, offset: int = 0,
              since: datetime | None = None, until: datetime | None = None,
              repository: str | None = None, pr: int | None = None,
              experiment: str | None = None, bisect: str | None = None
              ) -> tuple[list[Run], int]:
    q = select(Run)
    if benchmark_name is not None:
        b = benchmark(session, benchmark_name)
        if b is None:
            return [], 0
        q = q.where(Run.benchmark_id == b.id)
    q = filter_runs(q, label=label, branch=branch, commit=commit, series_id=series_id,
                    since=since, until=until, repository=repository, pr=pr,
                    experiment=experiment, bisect=bisect)
    if gpu is not None:
        q = q.join(Series, Series.id == Run.series_id).where(Series.gpu == gpu)
    count = session.scalar(select(func.count()).select_from(q.order_by(None).subquery())) or 0
    rows = session.scalars(q.order_by(Run.started_at.desc(), Run.id.desc()).limit(limit)
                           .offset(offset)).all()
    return list(rows), int(count)


# --- reads for the use cases: each gathers one kind of row for many runs in one query ---

class RunKey(NamedTuple):
    benchmark_id: int
    series_id: int
    body_sha256: str


def any_run(session: Session) -> bool:
    return session.scalar(select(Run.id).limit(1)) is not None


def run_keys(session: Session, ids: list[int]) -> dict[int, RunKey]:
    """id -> its benchmark, series and body hash (a record posted twice has one hash)."""
    if not ids:
        return {}
    rows = session.execute(select(Run.id, Run.benchmark_id, Run.series_id, Run.body_sha256)
                           .where(Run.id.in_(ids)))
    return {r.id: RunKey(r.benchmark_id, r.series_id, r.body_sha256) for r in rows}


def metric_names(session: Session, run_ids: list[int]) -> list[str]:
    """The metrics any of the runs holds (the ids in chunks: a list of any length)."""
    return sorted({m for i in range(0, len(run_ids), 10_000) for (m,) in session.execute(
        select(RunMetric.metric).where(RunMetric.run_id.in_(run_ids[i:i + 10_000])).distinct())})


def registered_metrics(session: Session, names: list[str]) -> dict[str, MetricDef]:
    """Registry rows of metrics the registry module does not know (registered at ingest)."""
    unknown = [n for n in names if lookup(n) is None]
    if not unknown:
        return {}
    return {m.name: m for m in session.scalars(select(MetricDef).where(MetricDef.name.in_(unknown)))}


def runs_by_id(session: Session, ids: list[int]) -> dict[int, Run]:
    if not ids:
        return {}
    return {r.id: r for r in session.scalars(select(Run).where(Run.id.in_(ids)))}


def lock_run(session: Session, run_id: int) -> Run | None:
    """The run, its row locked until the transaction ends, so that what the transaction reads
    next is what the one before it committed (two ranks of a set finishing together see each
    other). PostgreSQL: SELECT ... FOR UPDATE. SQLite ignores FOR UPDATE and starts its write
    transaction at the first write, so a write comes first: a no-op UPDATE of the row waits for
    the other writer and begins the transaction at the newest commit."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(update(Run).where(Run.id == run_id).values(id=Run.id))
    else:
        session.execute(select(Run.id).where(Run.id == run_id).with_for_update())
    return session.get(Run, run_id)


def traces_of(session: Session, run_ids: list[int]) -> list[TraceFile]:
    if not run_ids:
        return []
    return list(session.scalars(select(TraceFile).where(TraceFile.run_id.in_(run_ids))
                                .order_by(TraceFile.id)))


def ids_where(session: Session, bench_id: int, label: str | None = None,
              commit: str | None = None) -> list[int]:
    q = select(Run.id).where(Run.benchmark_id == bench_id)
    q = filter_runs(q, label=label, commit=commit)
    return sorted(r for (r,) in session.execute(q))


def recent_runs(session: Session, bench_id: int, limit: int) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.benchmark_id == bench_id)
                                .order_by(Run.started_at.desc(), Run.id.desc()).limit(limit)))


def counted() -> Any:
    """Per benchmark: its run count (`runs`), newest run id (`top`) and newest run time
    (`latest`), summed over the shards the triggers on `runs` keep (models.BenchmarkCount), as
    a subquery to join on `benchmark_id`."""
    return select(BenchmarkCount.benchmark_id,
                  func.sum(BenchmarkCount.runs).label("runs"),
                  func.max(BenchmarkCount.top).label("top"),
                  func.max(BenchmarkCount.latest).label("latest")
                  ).group_by(BenchmarkCount.benchmark_id).subquery()


def benchmark_overview(session: Session) -> list[tuple[Benchmark, int, datetime | None]]:
    """Every benchmark with its run count and newest run time, newest first (one query over
    the benchmarks and their kept counts)."""
    c = counted()
    rows = session.execute(select(Benchmark, c.c.runs, c.c.latest).join(
        c, c.c.benchmark_id == Benchmark.id, isouter=True)).all()
    return sorted(((b, int(n or 0), t) for b, n, t in rows),
                  key=lambda x: (x[2] is not None, x[2] or datetime.min), reverse=True)


def fingerprint(session: Session, bench_id: int) -> tuple[int, int]:
    """(run count, newest run id) of a benchmark: changes with every stored or deleted run
    (kept by the triggers on `runs`: a few rows read at any history length)."""
    n, top = session.execute(select(func.sum(BenchmarkCount.runs), func.max(BenchmarkCount.top))
                             .where(BenchmarkCount.benchmark_id == bench_id)).one()
    return int(n or 0), int(top or 0)


def latest_runs_per_series(session: Session, bench_id: int, series_ids: set[int],
                           history_branch: str | None = None) -> list[Run]:
    """The newest run of each series (of one branch's history): the ids in one window query,
    then those runs."""
    if not series_ids:
        return []
    rank = func.row_number().over(partition_by=Run.series_id,
                                  order_by=(Run.started_at.desc(), Run.id.desc())).label("k")
    sub = filter_runs(select(Run.id, rank).where(Run.benchmark_id == bench_id,
                                                 Run.series_id.in_(series_ids)),
                      history_branch=history_branch).subquery()
    ids = list(session.scalars(select(sub.c.id).where(sub.c.k == 1)))
    return list(runs_by_id(session, ids).values())


def delete_run(session: Session, run_id: int) -> None:
    """The run, and the stored evaluation state of its series (rebuilt from the history that
    remains when the series is next evaluated)."""
    series_id = session.scalar(select(Run.series_id).where(Run.id == run_id))
    session.execute(delete(SeriesState).where(SeriesState.series_id == series_id))
    session.execute(delete(Run).where(Run.id == run_id))


def baselines_holding(session: Session, run_id: int) -> list[Baseline]:
    """Baselines whose run set holds this run (run sets are JSON lists: read per benchmark)."""
    bench_id = session.scalar(select(Run.benchmark_id).where(Run.id == run_id))
    return [b for b in session.scalars(select(Baseline).where(Baseline.benchmark_id == bench_id))
            if run_id in (b.run_ids or [])]


def pending_trace_ids(session: Session) -> list[int]:
    """Traces still waiting for their analysis (state `pending`), oldest first."""
    return list(session.scalars(select(TraceFile.id).where(TraceFile.state == "pending")
                                .order_by(TraceFile.id)))


def trace_with_sha(session: Session, sha: str) -> bool:
    return session.scalars(select(TraceFile.id).where(TraceFile.sha256 == sha).limit(1)).first() \
        is not None


def experiment_runs(session: Session, exp_id: str) -> list:
    """The runs of an experiment: id, benchmark, series, body hash, arm, block, start."""
    return list(session.execute(
        select(Run.id, Run.benchmark_id, Run.series_id, Run.body_sha256, Run.experiment_arm,
               Run.experiment_block, Run.experiment_looks, Run.started_at, Run.label)
        .where(Run.experiment_id == exp_id).order_by(Run.experiment_block, Run.started_at, Run.id)))


def benchmark_names(session: Session, ids: set[int]) -> list[str]:
    return [n for (n,) in session.execute(select(Benchmark.name).where(Benchmark.id.in_(ids)))]


def run_means(session: Session, run_ids: list[int], metric: str) -> dict[int, float]:
    return {rid: mean for rid, mean in session.execute(
        select(RunMetric.run_id, RunMetric.mean).where(RunMetric.run_id.in_(run_ids),
                                                       RunMetric.metric == metric))}


def trace_summaries(session: Session, bench_id: int, run_ids: list[int] | None = None
                    ) -> dict[int, dict]:
    """The benchmark's runs (of `run_ids` where given) that hold a trace summary: id -> summary
    (one statement a thousand ids)."""
    q = select(Run.id, Run.trace_summary).where(Run.benchmark_id == bench_id,
                                                 Run.trace_summary.is_not(None))
    if run_ids is None:
        return {i: s for i, s in session.execute(q) if s}
    out: dict[int, dict] = {}
    for at in range(0, len(run_ids), 1000):
        out.update({i: s for i, s in session.execute(q.where(Run.id.in_(run_ids[at:at + 1000])))
                    if s})
    return out


def attribution_rows(session: Session, bench_id: int, metric: str, labels: list[str],
                     branch: str) -> list:
    """Per run of `branch`'s history (the history rule: no pull-request runs, experiment arms or
    bisect runs): series config, GPU model and count, determinism, body hash, the metric's mean
    and stdev, and id."""
    q = (select(Series.config, Run.determinism, Run.body_sha256, RunMetric.mean, RunMetric.stdev,
                Series.gpu, Series.gpu_count, Run.id)
         .join(Series, Series.id == Run.series_id)
         .join(RunMetric, (RunMetric.run_id == Run.id) & (RunMetric.metric == metric))
         .where(Run.benchmark_id == bench_id))
    if labels:
        q = q.where(Run.label.in_(labels))
    q = filter_runs(q, history_branch=branch)
    return list(session.execute(q.order_by(Run.id)))


