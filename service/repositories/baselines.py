"""Named baselines (run sets per benchmark) with their history, and baseline resolution."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..errors import ApiError, not_found
from ..models import Baseline, BaselineHistory, BaselineRun, Run
from .runs import benchmark, benchmark_id, utc


def _check_runs(session: Session, bench_id: int, run_ids: list[int]) -> list[int]:
    ids = sorted(set(run_ids))
    found = {r for (r,) in session.execute(select(Run.id).where(Run.id.in_(ids),
                                                                Run.benchmark_id == bench_id))}
    missing = [i for i in ids if i not in found]
    if missing:
        raise ApiError(422, "validation_error", f"run_ids: run {missing[0]} does not exist in this "
                       "benchmark", "run_ids")
    return ids


def create(session: Session, name: str, bench_name: str, run_ids: list[int]) -> Baseline:
    bench = benchmark(session, bench_name)
    if bench is None:
        raise ApiError(422, "validation_error", f"benchmark: no benchmark named {bench_name!r}",
                       "benchmark")
    ids = _check_runs(session, bench.id, run_ids)
    now = datetime.now(timezone.utc)
    row = Baseline(benchmark_id=bench.id, name=name, run_ids=ids, created_at=now, updated_at=now)
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        raise ApiError(409, "conflict", f"baseline {name!r} exists for {bench_name}; move it with "
                       f"PUT /api/v1/baselines/{bench_name}/{name}", "name") from None
    session.add_all(BaselineRun(baseline_id=row.id, run_id=i) for i in ids)
    return row


def get(session: Session, bench_name: str, name: str, bench_id: int | None = None
        ) -> Baseline | None:
    bench_id = bench_id if bench_id is not None else benchmark_id(session, bench_name)
    if bench_id is None:
        return None
    return session.scalars(select(Baseline).where(Baseline.benchmark_id == bench_id,
                                                  Baseline.name == name)).first()


def move(session: Session, bench_name: str, name: str, run_ids: list[int]) -> Baseline:
    row = get(session, bench_name, name)
    if row is None:
        raise not_found(f"baseline {name!r} of {bench_name}")
    ids = _check_runs(session, row.benchmark_id, run_ids)
    now = datetime.now(timezone.utc)
    session.add(BaselineHistory(baseline_id=row.id, run_ids=row.run_ids, valid_from=row.updated_at,
                                valid_to=now))
    session.execute(delete(BaselineRun).where(BaselineRun.baseline_id == row.id))
    session.add_all(BaselineRun(baseline_id=row.id, run_id=i) for i in ids)
    row.run_ids, row.updated_at = ids, now
    session.flush()
    return row


def out(session: Session, row: Baseline) -> dict:
    hist = session.scalars(select(BaselineHistory).where(BaselineHistory.baseline_id == row.id)
                           .order_by(BaselineHistory.id)).all()
    return {"id": row.id, "name": row.name, "benchmark": row.benchmark.name,
            "run_ids": list(row.run_ids), "created_at": utc(row.created_at),
            "updated_at": utc(row.updated_at),
            "history": [{"run_ids": h.run_ids, "valid_from": utc(h.valid_from),
                         "valid_to": utc(h.valid_to)} for h in hist]}


def list_all(session: Session, bench_name: str | None = None) -> list[Baseline]:
    q = select(Baseline).order_by(Baseline.id)
    if bench_name is not None:
        bench = benchmark(session, bench_name)
        if bench is None:
            return []
        q = q.where(Baseline.benchmark_id == bench.id)
    return list(session.scalars(q))


def resolve(session: Session, bench_name: str, ref: str, bench_id: int | None = None
            ) -> tuple[list[int], str]:
    """Baseline run ids by name, else by label, else by commit prefix. Returns (ids, how)."""
    bench_id = bench_id if bench_id is not None else benchmark_id(session, bench_name)
    if bench_id is None:
        raise not_found(f"benchmark {bench_name!r}")
    row = session.execute(select(Baseline.run_ids).where(Baseline.benchmark_id == bench_id,
                                                         Baseline.name == ref)).first()
    if row is not None:
        return list(row[0]), "name"
    ids = [r for (r,) in session.execute(select(Run.id).where(Run.benchmark_id == bench_id,
                                                              Run.label == ref))]
    if ids:
        return sorted(ids), "label"
    if len(ref) >= 4:
        ids = [r for (r,) in session.execute(select(Run.id).where(
            Run.benchmark_id == bench_id, Run.commit.startswith(ref, autoescape=True)))]
        if ids:
            return sorted(ids), "commit"
    raise ApiError(404, "not_found", f"baseline {ref!r}: no baseline, label or commit of "
                   f"{bench_name} by that name", "baseline")
