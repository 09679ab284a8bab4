"""Storing runs in bulk: one INSERT ... RETURNING for the runs of a batch, COPY (PostgreSQL) or
one executemany for their samples, per-run figures and evaluation inbox rows; benchmark, series
and metric-registry rows created on first use; the experiments' plans checked and stored with
their first run. Never commits: the caller owns the transaction."""
from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Callable
from datetime import datetime, timezone
from typing import cast

import numpy as np
from sqlalchemy import JSON, Table, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from collectors.metrics import UNKNOWN_THRESHOLD_PCT, lookup

from ..errors import Conflict, DomainError, Invalid
from ..experiments.tables import ExperimentPlan
from ..history.tables import PendingEvaluation
from ..models import Benchmark, MetricDef, Series
from .queries import benchmark, cache, canonical, find_by_key
from .schemas import RunIn
from .tables import Run, RunMetric, Sample

# a concurrent transaction stored the same key, series or benchmark first: retry the batch
RACE_ERRORS = (IntegrityError,)


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


def _made_here(session: Session) -> dict:
    """Rows this transaction created: looked up here, never put in the shared cache (the
    transaction may still roll back)."""
    return session.info.setdefault("pw_made_here", {})


def _benchmark_id(session: Session, name: str) -> int:
    shared = cache(session)
    key = ("benchmark", name)
    if key in shared:
        return shared[key]
    mine = _made_here(session)
    if key in mine:
        return mine[key]
    found = benchmark(session, name)
    if found is not None:  # only committed rows are cached, never one this transaction made
        shared[key] = found.id
        return found.id
    created = _get_or_create(session, Benchmark, {"name": name},
                             {"created_at": datetime.now(timezone.utc)})
    mine[key] = created.id
    return created.id


def _series_id(session: Session, bench_id: int, config: dict, hardware: dict) -> int:
    h, gpu, count = series_key(config, hardware)
    shared = cache(session)
    key = ("series", bench_id, h, gpu, count)
    if key in shared:
        return shared[key]
    mine = _made_here(session)
    if key in mine:
        return mine[key]
    lookup = {"benchmark_id": bench_id, "config_hash": h, "gpu": gpu, "gpu_count": count}
    found = session.scalars(select(Series).filter_by(**lookup)).first()
    if found is not None:  # committed: this transaction's own rows are in `mine`
        shared[key] = found.id
        return found.id
    made = mine[key] = _get_or_create(session, Series, lookup, {"config": config}).id
    return made


def series_key(config: dict, hardware: dict) -> tuple[str, str, int]:
    cfg = canonical(config)
    return (hashlib.sha256(cfg.encode()).hexdigest(), str(hardware.get("gpu") or ""),
            int(hardware.get("gpu_count") or 0))


def check_registry(session: Session, run: RunIn) -> dict[str, tuple[str, str]]:
    """Unit and direction per metric; refuses a known metric given another unit or direction."""
    shared = cache(session)
    names = [n for n in run.metrics if ("metric", n) not in shared and lookup(n) is None]
    if names:
        for row in session.scalars(select(MetricDef).where(MetricDef.name.in_(names))):
            shared[("metric", row.name)] = (row.unit, row.direction)
    known = {n: shared[("metric", n)] for n in run.metrics if ("metric", n) in shared}
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
    shared = cache(session)
    for name, (unit, direction) in defs.items():
        if lookup(name) is None and ("metric", name) not in shared:  # cached once committed
            _get_or_create(session, MetricDef, {"name": name},
                           {"unit": unit, "direction": direction,
                            "threshold_pct": UNKNOWN_THRESHOLD_PCT, "exact": False, "gated": True,
                            "builtin": False})



RUNS = cast(Table, Run.__table__)
SAMPLES = cast(Table, Sample.__table__)
RUN_METRICS = cast(Table, RunMetric.__table__)
PENDING = cast(Table, PendingEvaluation.__table__)


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
    """Store new runs with their samples: one INSERT ... RETURNING for the runs, one COPY (or
    executemany) each for samples, per-run figures and the evaluation inbox (Core statements:
    the ORM's unit of work costs more CPU than the statements). A concurrent duplicate key fails
    with IntegrityError; the caller retries. `on_error(index, error)` may rename a record's
    error before it is raised."""
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
        rows.append(_run_row(run, digests[i], bench_id, series_id, now))
    _keep_experiments(session, runs, on_error)
    _keep_plans(session, runs, on_error)
    ids = _insert_runs(session, rows)
    _store_figures(session, ids, runs, defs_of)
    _add_plans(session, runs, ids)
    inbox = [{"benchmark_id": row["benchmark_id"], "run_id": rid} for rid, row in zip(ids, rows)
             if row["pr"] is None and row["experiment_id"] is None and row["bisect_id"] is None]
    _bulk_insert(session, PENDING, ("benchmark_id", "run_id"), inbox)
    return ids


def _keep_experiments(session: Session, runs: list[RunIn],
                      on_error: Callable[[int, DomainError], None] | None) -> None:
    """An experiment id is resolved within its benchmark (the benchmark of its stored runs, or
    of the batch's first record that names it): a record of another benchmark naming it is
    refused (nothing of the batch is stored), so a token scoped to one benchmark never adds runs
    to another's experiment."""
    tagged = [(i, r.benchmark, r.experiment.id) for i, r in enumerate(runs)
              if r.experiment is not None]
    if not tagged:
        return
    owner = {x: name for x, name in session.execute(
        select(Run.experiment_id, Benchmark.name).join(Benchmark, Benchmark.id == Run.benchmark_id)
        .where(Run.experiment_id.in_(sorted({x for _, _, x in tagged}))).distinct())}
    for i, bench, exp_id in tagged:
        if owner.setdefault(exp_id, bench) != bench:
            e = Conflict(f"experiment.id: experiment {exp_id!r} belongs to another benchmark, "
                         f"not {bench!r} (pick an id of your own)", "experiment.id",
                         code="experiment_of_another_benchmark")
            if on_error is not None:
                on_error(i, e)
            raise e


def _keep_plans(session: Session, runs: list[RunIn],
                on_error: Callable[[int, DomainError], None] | None) -> None:
    """An experiment's plan is what its first run says (spec/api.md, One experiment one
    answer): a record that names other looks or another question (metrics, thresholds, vary)
    than its stored plan, or than an earlier record of the batch, is refused (nothing of the
    batch is stored); one that names none joins the plan."""
    tagged = [(i, r.experiment) for i, r in enumerate(runs) if r.experiment is not None]
    if not tagged:
        return
    planned: dict[str, tuple[int | None, dict | None]] = {
        p.experiment_id: (p.looks, p.question) for p in session.scalars(
            select(ExperimentPlan).where(ExperimentPlan.experiment_id.in_(
                sorted({e.id for _, e in tagged}))))}
    for i, exp in tagged:
        looks, question = planned.setdefault(exp.id, (exp.looks, exp.question()))
        e = None
        if exp.looks is not None and exp.looks != looks:
            e = Invalid(f"experiment.looks: experiment {exp.id!r} was planned with "
                        f"{looks if looks is not None else 'no'} looks (its first run); this "
                        f"record says {exp.looks}", "experiment.looks", code="plan_differs")
        elif exp.question() is not None and _key(exp.question()) != _key(question):
            e = Invalid(f"experiment: experiment {exp.id!r} was asked {_asked(question)} (its "
                        f"first run); this record asks {_asked(exp.question())}", "experiment",
                        code="plan_differs")
        if e is not None:
            if on_error is not None:
                on_error(i, e)
            raise e


def _key(question: dict | None) -> tuple:
    """A question as compared: the names it lists in any order, each threshold by its metric."""
    q = question or {}
    return (sorted(q.get("metrics") or ()), sorted((q.get("thresholds") or {}).items()),
            sorted(q.get("vary") or ()))


def _asked(question: dict | None) -> str:
    if not question:
        return "no metrics, thresholds or vary"
    return "; ".join(f"{k} {v}" for k, v in question.items())[:300]


def _add_plans(session: Session, runs: list[RunIn], ids: list[int]) -> None:
    """The plan of each experiment this batch starts, from its first record."""
    first: dict[str, tuple[int | None, dict | None, int]] = {}
    for run, rid in zip(runs, ids):
        if run.experiment is not None:
            first.setdefault(run.experiment.id, (run.experiment.looks, run.experiment.question(), rid))
    if not first:
        return
    known = set(session.scalars(select(ExperimentPlan.experiment_id).where(
        ExperimentPlan.experiment_id.in_(sorted(first)))))
    now = datetime.now(timezone.utc)
    session.add_all([ExperimentPlan(experiment_id=x, looks=looks, question=question,
                                    first_run_id=rid, created_at=now)
                     for x, (looks, question, rid) in first.items() if x not in known])
    session.flush()  # a concurrent first run of the same experiment fails here; the caller retries


def _insert_runs(session: Session, rows: list[dict]) -> list[int]:
    """The run rows' ids, in order. PostgreSQL: the ids drawn from the sequence in one statement,
    then one COPY (an INSERT of a batch is a statement of thousands of parameters, which the
    driver parses again for every batch); elsewhere one INSERT ... RETURNING."""
    if len(rows) == 1:
        return [session.execute(RUNS.insert().values(**rows[0]).returning(RUNS.c.id)).scalar_one()]
    if session.connection().dialect.name != "postgresql":
        return list(session.execute(RUNS.insert().returning(RUNS.c.id, sort_by_parameter_order=True),
                                    rows).scalars())
    ids = sorted(session.execute(text("SELECT nextval(pg_get_serial_sequence('runs', 'id')) "
                                      "FROM generate_series(1, :n)"), {"n": len(rows)}).scalars())
    cols = tuple(rows[0])
    json_cols = {c: RUNS.c[c].type for c in cols if isinstance(RUNS.c[c].type, JSON)}
    _bulk_insert(session, RUNS, ("id", *cols), [
        (rid, *(_json_text(json_cols[c], row[c]) if c in json_cols else row[c] for c in cols))
        for rid, row in zip(ids, rows)])
    return ids


def _json_text(kind: JSON, value: object) -> str | None:
    """A JSON column's text as the INSERT would store it: `null` for None unless the column
    stores None as SQL NULL."""
    if value is None and kind.none_as_null:
        return None
    return json.dumps(value)


def _run_row(run: RunIn, digest: str, bench_id: int, series_id: int, now: datetime) -> dict:
    exp, bis = run.experiment, run.bisect
    return dict(
        benchmark_id=bench_id, series_id=series_id, config=run.config, commit=run.commit,
        branch=run.branch, label=run.label, repository=run.repository, pr=run.pr,
        hardware=run.hardware, environment=run.environment, started_at=run.started_at or now,
        created_at=now, idempotency_key=run.idempotency_key, body_sha256=digest,
        determinism=run.determinism, trace_summary=run.trace_summary, extra=run.extras(),
        experiment_id=exp.id if exp else None, experiment_arm=exp.arm if exp else None,
        experiment_block=exp.block if exp else None, experiment_looks=exp.looks if exp else None,
        bisect_id=bis.id if bis else None,
        bisect=bis.model_dump(mode="json", exclude_none=True) if bis else None)


def _store_figures(session: Session, ids: list[int], runs: list[RunIn],
                   defs_of: list[dict[str, tuple[str, str]]]) -> None:
    """Samples and per-run figures (n, mean, median, stdev) of the stored runs."""
    samples: list[tuple] = []
    stats: list[tuple] = []
    for run_id, run, defs in zip(ids, runs, defs_of):
        for name, m in run.metrics.items():
            unit, direction = defs[name]
            vals = [float(v) for v in m.samples]
            samples.extend((run_id, name, i, v) for i, v in enumerate(vals))
            # numpy's stdev: the statistics module's works in exact fractions, a quarter of
            # a batch's CPU (the same figure to within rounding)
            stats.append((run_id, name, unit, direction, len(vals), statistics.fmean(vals),
                          statistics.median(vals),
                          float(np.std(vals, ddof=1)) if len(vals) > 1 else None))
    _bulk_insert(session, SAMPLES, ("run_id", "metric", "trial", "value"), samples)
    _bulk_insert(session, RUN_METRICS, ("run_id", "metric", "unit", "direction", "n", "mean",
                                        "median", "stdev"), stats)


def _bulk_insert(session: Session, table: Table, columns: tuple[str, ...],
                 rows: list[tuple] | list[dict]) -> None:
    """Many rows (tuples in `columns` order, or dicts) at once: PostgreSQL's COPY (within the
    transaction), elsewhere an executemany of one cached statement."""
    if not rows:
        return
    tuples = [tuple(r[c] for c in columns) if isinstance(r, dict) else r for r in rows]
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur, cur.copy(
                f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in tuples:
                copy.write_row(row)
        return
    session.execute(table.insert(), [dict(zip(columns, r)) for r in tuples])


def _same_or_conflict(prior: Run, digest: str) -> tuple[int, bool]:
    if prior.body_sha256 == digest:
        return prior.id, False
    raise Conflict("idempotency_key was already used with a different run body",
                   "idempotency_key", code="idempotency_conflict")


