"""Run storage and queries. Repositories never commit: the caller owns the transaction."""
from __future__ import annotations

import hashlib
import json
import statistics
import weakref
from collections.abc import Callable
from datetime import datetime, timezone
from typing import cast

from sqlalchemy import Table, delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from collectors.metrics import UNKNOWN_THRESHOLD_PCT, lookup

from ..errors import Conflict, DomainError, Invalid, NotFound
from ..models import Baseline, Benchmark, MetricDef, Run, RunMetric, Sample, Series, TraceFile
from ..schemas import RunIn


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


def body_hash(run: RunIn) -> str:
    body = run.model_dump(mode="json", exclude={"idempotency_key", "trace_files"},
                          exclude_none=True)
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def _get_or_create(session: Session, model, lookup: dict, create: dict):
    obj = session.scalars(select(model).filter_by(**lookup)).first()
    if obj is not None:
        return obj
    try:
        with session.begin_nested():
            obj = model(**lookup, **create)
            session.add(obj)
            session.flush()
        return obj
    except IntegrityError:  # created concurrently: take theirs
        return session.scalars(select(model).filter_by(**lookup)).one()


_IDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cache(session: Session) -> dict:
    """Per-engine cache of rows that never change once written (benchmark and series ids,
    registered metric definitions): spares the hot ingest path a query each."""
    engine = session.get_bind()
    c = _IDS.get(engine)
    if c is None:
        c = _IDS[engine] = {}
    return c


def benchmark(session: Session, name: str, create: bool = False) -> Benchmark | None:
    if create:
        return _get_or_create(session, Benchmark, {"name": name},
                              {"created_at": datetime.now(timezone.utc)})
    return session.scalars(select(Benchmark).where(Benchmark.name == name)).first()


def benchmark_id(session: Session, name: str) -> int | None:
    """The id of an existing benchmark (cached once seen), or None."""
    cache = _cache(session)
    key = ("benchmark", name)
    if key not in cache:
        found = benchmark(session, name)
        if found is None:
            return None
        cache[key] = found.id
    return cache[key]


def _benchmark_id(session: Session, name: str) -> int:
    cache = _cache(session)
    key = ("benchmark", name)
    if key in cache:
        return cache[key]
    mine = _made_here(session)
    if key in mine:
        return mine[key]
    found = benchmark(session, name)
    if found is not None:  # only committed rows are cached, never one this transaction made
        cache[key] = found.id
        return found.id
    created = benchmark(session, name, create=True)
    assert created is not None
    mine[key] = created.id
    return created.id


def _made_here(session: Session) -> dict:
    """Rows this transaction created: looked up here, never put in the shared cache (the
    transaction may still roll back)."""
    return session.info.setdefault("pw_made_here", {})


def _series_id(session: Session, bench_id: int, config: dict, hardware: dict) -> int:
    h, gpu, count = series_key(config, hardware)
    cache = _cache(session)
    key = ("series", bench_id, h, gpu, count)
    if key in cache:
        return cache[key]
    mine = _made_here(session)
    if key in mine:
        return mine[key]
    lookup = {"benchmark_id": bench_id, "config_hash": h, "gpu": gpu, "gpu_count": count}
    found = session.scalars(select(Series).filter_by(**lookup)).first()
    if found is not None:  # committed: this transaction's own rows are in `mine`
        cache[key] = found.id
        return found.id
    made = mine[key] = _get_or_create(session, Series, lookup, {"config": config}).id
    return made


def series_key(config: dict, hardware: dict) -> tuple[str, str, int]:
    cfg = canonical(config)
    return (hashlib.sha256(cfg.encode()).hexdigest(), str(hardware.get("gpu") or ""),
            int(hardware.get("gpu_count") or 0))


def check_registry(session: Session, run: RunIn) -> dict[str, tuple[str, str]]:
    """Unit and direction per metric; refuses a known metric given another unit or direction."""
    cache = _cache(session)
    names = [n for n in run.metrics if ("metric", n) not in cache and lookup(n) is None]
    if names:
        for row in session.scalars(select(MetricDef).where(MetricDef.name.in_(names))):
            cache[("metric", row.name)] = (row.unit, row.direction)
    known = {n: cache[("metric", n)] for n in run.metrics if ("metric", n) in cache}
    out = {}
    for name, m in run.metrics.items():
        ref = known.get(name)
        if ref is None and (spec := lookup(name)) is not None:
            ref = (spec.unit, spec.direction)
        if ref is not None:
            unit, direction = ref
            if m.direction is not None and m.direction != direction:
                raise Invalid(f"metrics.{name}.direction: {name} is "
                               f"'{direction}' is better, not '{m.direction}'",
                               f"metrics.{name}.direction")
            if m.unit and unit and m.unit != unit:
                raise Invalid(f"metrics.{name}.unit: {name} is measured "
                               f"in '{unit}', not '{m.unit}'", f"metrics.{name}.unit")
            out[name] = (unit or m.unit, direction)
        else:
            if m.direction is None:
                raise Invalid(f"metrics.{name}.direction: unknown "
                               "metric needs a direction ('higher' or 'lower' is better)",
                               f"metrics.{name}.direction")
            out[name] = (m.unit, m.direction)
    return out


def _register_unknown(session: Session, defs: dict[str, tuple[str, str]]) -> None:
    cache = _cache(session)
    for name, (unit, direction) in defs.items():
        if lookup(name) is None and ("metric", name) not in cache:  # cached once committed
            _get_or_create(session, MetricDef, {"name": name},
                           {"unit": unit, "direction": direction,
                            "threshold_pct": UNKNOWN_THRESHOLD_PCT, "exact": False, "gated": True,
                            "builtin": False})


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


RUNS = cast(Table, Run.__table__)
SAMPLES = cast(Table, Sample.__table__)
RUN_METRICS = cast(Table, RunMetric.__table__)


def create_run(session: Session, run: RunIn, digest: str, check_key: bool = True
               ) -> tuple[int, bool]:
    """Store a run with its samples. Returns (id, created). 409 for a reused key, other body.

    `check_key=False` skips the look-up of the idempotency key: the unique constraint still
    refuses a reused key (IntegrityError), and the caller retries with the look-up."""
    if run.idempotency_key and check_key:
        prior = find_by_key(session, run.idempotency_key)
        if prior is not None:
            return _same_or_conflict(prior, digest)
    return create_runs(session, [run], [digest])[0], True


def create_runs(session: Session, runs: list[RunIn], digests: list[str],
                on_error: Callable[[int, DomainError], None] | None = None) -> list[int]:
    """Store new runs with their samples: one INSERT ... RETURNING for the runs, one
    executemany each for samples and per-run figures (Core statements: the ORM's unit of work
    costs more CPU than the statements). A concurrent duplicate key fails with IntegrityError;
    the caller retries. `on_error(index, error)` may rename a record's error before it is
    raised."""
    now = datetime.now(timezone.utc)
    rows, defs_of = [], []
    for i, run in enumerate(runs):
        try:
            defs = check_registry(session, run)
            bench_id = _benchmark_id(session, run.benchmark)
            series_id = _series_id(session, bench_id, run.config, run.hardware)
            _register_unknown(session, defs)
        except DomainError as e:
            if on_error is not None:
                on_error(i, e)
            raise
        defs_of.append(defs)
        rows.append(dict(
            benchmark_id=bench_id, series_id=series_id, config=run.config, commit=run.commit,
            branch=run.branch, label=run.label, repository=run.repository, pr=run.pr,
            hardware=run.hardware, environment=run.environment, started_at=run.started_at or now,
            created_at=now, idempotency_key=run.idempotency_key, body_sha256=digests[i],
            determinism=run.determinism, trace_summary=run.trace_summary, extra=run.extras(),
            experiment_id=run.experiment.id if run.experiment else None,
            experiment_arm=run.experiment.arm if run.experiment else None,
            experiment_block=run.experiment.block if run.experiment else None,
            experiment_looks=run.experiment.looks if run.experiment else None,
            bisect_id=run.bisect.id if run.bisect else None,
            bisect=run.bisect.model_dump(mode="json", exclude_none=True) if run.bisect else None))
    if len(rows) == 1:
        ids = [session.execute(RUNS.insert().values(**rows[0]).returning(RUNS.c.id)).scalar_one()]
    else:
        ids = list(session.execute(RUNS.insert().returning(RUNS.c.id, sort_by_parameter_order=True),
                                   rows).scalars())
    samples: list[dict] = []
    stats: list[dict] = []
    for run_id, run, defs in zip(ids, runs, defs_of):
        for name, m in run.metrics.items():
            unit, direction = defs[name]
            vals = [float(v) for v in m.samples]
            samples.extend({"run_id": run_id, "metric": name, "trial": i, "value": v}
                           for i, v in enumerate(vals))
            stats.append({"run_id": run_id, "metric": name, "unit": unit, "direction": direction,
                          "n": len(vals), "mean": statistics.fmean(vals),
                          "median": statistics.median(vals),
                          "stdev": statistics.stdev(vals) if len(vals) > 1 else None})
    _bulk_insert(session, SAMPLES, ("run_id", "metric", "trial", "value"), samples)
    _bulk_insert(session, RUN_METRICS, ("run_id", "metric", "unit", "direction", "n", "mean",
                                        "median", "stdev"), stats)
    return ids


def _bulk_insert(session: Session, table: Table, columns: tuple[str, ...], rows: list[dict]) -> None:
    """Many rows at once: PostgreSQL's COPY (within the transaction), elsewhere an executemany
    of one cached statement."""
    if not rows:
        return
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur, cur.copy(
                f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(tuple(row[c] for c in columns))
        return
    session.execute(table.insert(), rows)


def _same_or_conflict(prior: Run, digest: str) -> tuple[int, bool]:
    if prior.body_sha256 == digest:
        return prior.id, False
    raise Conflict("idempotency_key was already used with a different run body",
                   "idempotency_key", code="idempotency_conflict")


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
           "trace_summary": row.trace_summary if with_samples else None,
           "traces": [{"id": t.id, "filename": t.filename, "sha256": t.sha256,
                       "size_bytes": t.size_bytes, "format": t.format,
                       "state": t.state or "done", "error": t.error} for t in traces]}
    return out


def filter_runs(q, label: str | None = None, branch: str | None = None, commit: str | None = None,
                series_id: int | None = None, since: datetime | None = None,
                until: datetime | None = None, history_branch: str | None = None,
                run_ids: list[int] | None = None, repository: str | None = None,
                pr: int | None = None, experiment: str | None = None, bisect: str | None = None):
    """The run filters the API, the dashboard and the history share (None or empty: no filter).

    `history_branch` selects one branch's history, THE history rule (spec/api.md v1.2 item 5):
    runs of that branch (runs that name no branch count as the default branch's, as collectors
    without git metadata write them), never runs of a pull request, never experiment arms, never
    bisect runs. `commit` matches both ways
    (item 7): the shorter of the given and the stored commit is a prefix of the longer and has at
    least 7 characters."""
    if label:
        q = q.where(Run.label == label)
    if branch:
        q = q.where(Run.branch == branch)
    if history_branch:
        q = q.where(Run.pr.is_(None), or_(Run.branch == history_branch, Run.branch.is_(None)),
                    Run.experiment_id.is_(None), Run.bisect_id.is_(None))
    if commit:
        q = q.where(commit_matches(commit))
    if bisect:
        q = q.where(Run.bisect_id == bisect)
    if run_ids is not None:
        q = q.where(Run.id.in_(run_ids))
    if repository:
        q = q.where(Run.repository == repository)
    if pr is not None:
        q = q.where(Run.pr == pr)
    if experiment:
        q = q.where(Run.experiment_id == experiment)
    if series_id is not None:
        q = q.where(Run.series_id == series_id)
    if since is not None:
        q = q.where(Run.started_at >= since)
    if until is not None:
        q = q.where(Run.started_at <= until)
    return q


MIN_COMMIT = 7


def commit_matches(commit: str):
    """Stored commits that `commit` names: it is a prefix of theirs, or theirs (of at least 7
    characters) is a prefix of it."""
    given = commit.lower()
    longer = Run.commit.startswith(given, autoescape=True) if len(given) >= MIN_COMMIT \
        else Run.commit == given
    prefixes = {given[:n] for n in range(MIN_COMMIT, len(given))}
    return or_(longer, Run.commit.in_(prefixes)) if prefixes else longer


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

def run_keys(session: Session, ids: list[int]) -> dict[int, tuple[int, int, str]]:
    """id -> (benchmark_id, series_id, body_sha256)."""
    if not ids:
        return {}
    rows = session.execute(select(Run.id, Run.benchmark_id, Run.series_id, Run.body_sha256)
                           .where(Run.id.in_(ids)))
    return {r.id: (r.benchmark_id, r.series_id, r.body_sha256) for r in rows}


def series_rows(session: Session, ids: set[int]) -> dict[int, Series]:
    if not ids:
        return {}
    return {s.id: s for s in session.scalars(select(Series).where(Series.id.in_(ids)))}


def metric_names(session: Session, run_ids: list[int]) -> list[str]:
    return sorted({m for (m,) in session.execute(
        select(RunMetric.metric).where(RunMetric.run_id.in_(run_ids)))})


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
    """The run, its row locked until the transaction ends (PostgreSQL; SQLite has one writer)."""
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


def unit_of(session: Session, bench_id: int, metric: str) -> str:
    return session.scalar(select(RunMetric.unit).join(Run, Run.id == RunMetric.run_id)
                          .where(Run.benchmark_id == bench_id, RunMetric.metric == metric)
                          .limit(1)) or ""


def recent_runs(session: Session, bench_id: int, limit: int) -> list[Run]:
    return list(session.scalars(select(Run).where(Run.benchmark_id == bench_id)
                                .order_by(Run.started_at.desc(), Run.id.desc()).limit(limit)))


def benchmark_overview(session: Session) -> list[tuple[Benchmark, int, datetime | None]]:
    """Every benchmark with its run count and newest run time, newest first (one query)."""
    rows = session.execute(select(Benchmark, func.count(Run.id), func.max(Run.started_at))
                           .join(Run, Run.benchmark_id == Benchmark.id, isouter=True)
                           .group_by(Benchmark.id)).all()
    return sorted(((b, int(c), t) for b, c, t in rows),
                  key=lambda x: (x[2] is not None, x[2] or datetime.min), reverse=True)


def fingerprint(session: Session, bench_id: int) -> tuple[int, int]:
    """(run count, newest run id) of a benchmark: changes with every stored or deleted run."""
    n, top = session.execute(select(func.count(), func.max(Run.id))
                             .where(Run.benchmark_id == bench_id)).one()
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
    session.execute(delete(Run).where(Run.id == run_id))


def baselines_holding(session: Session, run_id: int) -> list[Baseline]:
    """Baselines whose run set holds this run (run sets are JSON lists: read per benchmark)."""
    bench_id = session.scalar(select(Run.benchmark_id).where(Run.id == run_id))
    return [b for b in session.scalars(select(Baseline).where(Baseline.benchmark_id == bench_id))
            if run_id in (b.run_ids or [])]


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


def attribution_rows(session: Session, bench_id: int, metric: str, labels: list[str],
                     branch: str | None) -> list:
    """Per run: series config, determinism, body hash and the metric's mean and stdev."""
    q = (select(Series.config, Run.determinism, Run.body_sha256, RunMetric.mean, RunMetric.stdev)
         .join(Series, Series.id == Run.series_id)
         .join(RunMetric, (RunMetric.run_id == Run.id) & (RunMetric.metric == metric))
         .where(Run.benchmark_id == bench_id))
    if labels:
        q = q.where(Run.label.in_(labels))
    if branch:
        q = filter_runs(q, history_branch=branch)
    return list(session.execute(q.order_by(Run.id)))


def series_of_benchmark(session: Session, bench_id: int) -> list[Series]:
    return list(session.scalars(select(Series).where(Series.benchmark_id == bench_id)
                                .order_by(Series.id)))
