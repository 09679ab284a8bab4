"""Run storage and queries. Repositories never commit: the caller owns the transaction."""
from __future__ import annotations

import hashlib
import json
import statistics
import weakref
from datetime import datetime, timezone

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..errors import ApiError, not_found
from ..models import Benchmark, MetricDef, Run, RunMetric, Sample, Series, TraceFile
from ..registry import UNKNOWN_THRESHOLD_PCT, builtin
from ..schemas import RunIn

SPEC_FIELDS = set(RunIn.model_fields)


def utc(dt: datetime | None) -> str | None:
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".") + "Z"


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def body_hash(run: RunIn) -> str:
    return hashlib.sha256(canonical(run.model_dump(mode="json", exclude={"idempotency_key"}))
                          .encode()).hexdigest()


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


_IDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


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
    found = benchmark(session, name)
    if found is not None:  # only committed rows are cached, never one this transaction made
        cache[key] = found.id
        return found.id
    return benchmark(session, name, create=True).id


def _series_id(session: Session, bench_id: int, config: dict, hardware: dict) -> int:
    h, gpu, count = series_key(config, hardware)
    cache = _cache(session)
    key = ("series", bench_id, h, gpu, count)
    if key in cache:
        return cache[key]
    lookup = {"benchmark_id": bench_id, "config_hash": h, "gpu": gpu, "gpu_count": count}
    found = session.scalars(select(Series).filter_by(**lookup)).first()
    if found is not None:
        cache[key] = found.id
        return found.id
    return _get_or_create(session, Series, lookup, {"config": config}).id


def series_key(config: dict, hardware: dict) -> tuple[str, str, int]:
    cfg = canonical(config)
    return (hashlib.sha256(cfg.encode()).hexdigest(), str(hardware.get("gpu") or ""),
            int(hardware.get("gpu_count") or 0))


def check_registry(session: Session, run: RunIn) -> dict[str, tuple[str, str]]:
    """Unit and direction per metric; refuses a known metric given another unit or direction."""
    cache = _cache(session)
    names = [n for n in run.metrics if ("metric", n) not in cache and builtin(n) is None]
    if names:
        for m in session.scalars(select(MetricDef).where(MetricDef.name.in_(names))):
            cache[("metric", m.name)] = (m.unit, m.direction)
    known = {n: cache[("metric", n)] for n in run.metrics if ("metric", n) in cache}
    out = {}
    for name, m in run.metrics.items():
        ref = known.get(name)
        if ref is None and (b := builtin(name)) is not None:
            ref = (b.unit, b.direction)
        if ref is not None:
            unit, direction = ref
            if m.direction is not None and m.direction != direction:
                raise ApiError(422, "validation_error", f"metrics.{name}.direction: {name} is "
                               f"'{direction}' is better, not '{m.direction}'",
                               f"metrics.{name}.direction")
            if m.unit and unit and m.unit != unit:
                raise ApiError(422, "validation_error", f"metrics.{name}.unit: {name} is measured "
                               f"in '{unit}', not '{m.unit}'", f"metrics.{name}.unit")
            out[name] = (unit or m.unit, direction)
        else:
            if m.direction is None:
                raise ApiError(422, "validation_error", f"metrics.{name}.direction: unknown "
                               "metric needs a direction ('higher' or 'lower' is better)",
                               f"metrics.{name}.direction")
            out[name] = (m.unit, m.direction)
    return out


def _register_unknown(session: Session, defs: dict[str, tuple[str, str]]) -> None:
    cache = _cache(session)
    for name, (unit, direction) in defs.items():
        if builtin(name) is None and ("metric", name) not in cache:  # cached once committed
            _get_or_create(session, MetricDef, {"name": name},
                           {"unit": unit, "direction": direction,
                            "threshold_pct": UNKNOWN_THRESHOLD_PCT, "exact": False, "gated": True,
                            "builtin": False})


def find_by_key(session: Session, key: str) -> Run | None:
    return session.scalars(select(Run).where(Run.idempotency_key == key)).first()


def create_run(session: Session, run: RunIn, digest: str, check_key: bool = True
               ) -> tuple[int, bool]:
    """Store a run with its samples. Returns (id, created). 409 for a reused key, other body.

    `check_key=False` skips the look-up of the idempotency key: the unique constraint still
    refuses a reused key (IntegrityError), and the caller retries with the look-up."""
    if run.idempotency_key and check_key:
        prior = find_by_key(session, run.idempotency_key)
        if prior is not None:
            return _same_or_conflict(prior, digest)
    defs = check_registry(session, run)
    bench_id = _benchmark_id(session, run.benchmark)
    series_id = _series_id(session, bench_id, run.config, run.hardware)
    _register_unknown(session, defs)
    now = datetime.now(timezone.utc)
    extra = {k: v for k, v in (run.model_extra or {}).items()}
    # Core INSERT ... RETURNING: the ORM unit of work costs more CPU than the statement itself
    run_id = session.execute(insert(Run).values(
        benchmark_id=bench_id, series_id=series_id, config=run.config, commit=run.commit,
        branch=run.branch, label=run.label, repository=run.repository, pr=run.pr,
        hardware=run.hardware, environment=run.environment, started_at=run.started_at or now,
        created_at=now, idempotency_key=run.idempotency_key, body_sha256=digest,
        determinism=run.determinism, trace_summary=run.trace_summary, extra=extra,
    ).returning(Run.id)).scalar_one()  # a concurrent duplicate key fails here; caller retries
    samples, stats = [], []
    for name, m in run.metrics.items():
        unit, direction = defs[name]
        vals = [float(v) for v in m.samples]
        samples.extend({"run_id": run_id, "metric": name, "trial": i, "value": v}
                       for i, v in enumerate(vals))
        stats.append({"run_id": run_id, "metric": name, "unit": unit, "direction": direction,
                      "n": len(vals), "mean": statistics.fmean(vals),
                      "median": statistics.median(vals),
                      "stdev": statistics.stdev(vals) if len(vals) > 1 else None})
    # executemany with one cached statement (psycopg pipelines the rows; a multi-VALUES insert
    # would be compiled anew for every run size)
    session.execute(Sample.__table__.insert(), samples)
    session.execute(RunMetric.__table__.insert(), stats)
    return run_id, True


def _same_or_conflict(prior: Run, digest: str) -> tuple[int, bool]:
    if prior.body_sha256 == digest:
        return prior.id, False
    raise ApiError(409, "idempotency_conflict", "idempotency_key was already used with a "
                   "different run body", "idempotency_key")


def get_run(session: Session, run_id: int) -> Run:
    row = session.get(Run, run_id)
    if row is None:
        raise not_found(f"run {run_id}")
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
           "trace_summary": row.trace_summary if with_samples else None,
           "traces": [{"id": t.id, "filename": t.filename, "sha256": t.sha256,
                       "size_bytes": t.size_bytes, "format": t.format} for t in traces]}
    return out


def filter_runs(q, label: str | None = None, branch: str | None = None, commit: str | None = None,
                series_id: int | None = None, since: datetime | None = None,
                until: datetime | None = None):
    """The run filters the API and the dashboard share (None or empty: no filter)."""
    if label:
        q = q.where(Run.label == label)
    if branch:
        q = q.where(Run.branch == branch)
    if commit:
        q = q.where(Run.commit.startswith(commit, autoescape=True))
    if series_id is not None:
        q = q.where(Run.series_id == series_id)
    if since is not None:
        q = q.where(Run.started_at >= since)
    if until is not None:
        q = q.where(Run.started_at <= until)
    return q


def list_runs(session: Session, benchmark_name: str | None = None, label: str | None = None,
              branch: str | None = None, commit: str | None = None, gpu: str | None = None,
              series_id: int | None = None, limit: int = 100, offset: int = 0,
              since: datetime | None = None, until: datetime | None = None) -> tuple[list[Run], int]:
    q = select(Run)
    if benchmark_name is not None:
        b = benchmark(session, benchmark_name)
        if b is None:
            return [], 0
        q = q.where(Run.benchmark_id == b.id)
    q = filter_runs(q, label=label, branch=branch, commit=commit, series_id=series_id,
                    since=since, until=until)
    if gpu is not None:
        q = q.join(Series, Series.id == Run.series_id).where(Series.gpu == gpu)
    count = session.scalar(select(func.count()).select_from(q.order_by(None).subquery())) or 0
    rows = session.scalars(q.order_by(Run.started_at.desc(), Run.id.desc()).limit(limit)
                           .offset(offset)).all()
    return list(rows), int(count)
