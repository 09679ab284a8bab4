"""Named baselines (run sets per benchmark) with their history. Queries only: resolving a
baseline reference is a use case (named.py)."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..errors import Conflict, Invalid, NotFound
from ..runs.queries import benchmark, benchmark_id, utc
from ..runs.tables import Run
from .tables import Baseline, BaselineHistory


def _check_runs(session: Session, bench_id: int, run_ids: list[int]) -> list[int]:
    ids = sorted(set(run_ids))
    found = {r for (r,) in session.execute(select(Run.id).where(Run.id.in_(ids),
                                                                Run.benchmark_id == bench_id))}
    missing = [i for i in ids if i not in found]
    if missing:
        raise Invalid(f"run_ids: run {missing[0]} does not exist in this benchmark", "run_ids")
    return ids


def create(session: Session, name: str, bench_name: str, run_ids: list[int]) -> Baseline:
    bench = benchmark(session, bench_name)
    if bench is None:
        raise Invalid(f"benchmark: no benchmark named {bench_name!r}", "benchmark")
    ids = _check_runs(session, bench.id, run_ids)
    now = datetime.now(timezone.utc)
    row = Baseline(benchmark_id=bench.id, name=name, run_ids=ids, created_at=now, updated_at=now)
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        raise Conflict(f"baseline {name!r} exists for {bench_name}; move it with "
                       f"PUT /api/v1/baselines/{bench_name}/{name}", "name") from None
    return row


def get(session: Session, bench_name: str, name: str, bench_id: int | None = None
        ) -> Baseline | None:
    bench_id = bench_id if bench_id is not None else benchmark_id(session, bench_name)
    if bench_id is None:
        return None
    return session.scalars(select(Baseline).where(Baseline.benchmark_id == bench_id,
                                                  Baseline.name == name)).first()


def get_or_404(session: Session, bench_name: str, name: str) -> Baseline:
    row = get(session, bench_name, name)
    if row is None:
        raise NotFound(f"baseline {name!r} of {bench_name} not found", "baseline")
    return row


def move(session: Session, bench_name: str, name: str, run_ids: list[int]) -> Baseline:
    row = get_or_404(session, bench_name, name)
    ids = _check_runs(session, row.benchmark_id, run_ids)
    now = datetime.now(timezone.utc)
    session.add(BaselineHistory(baseline_id=row.id, run_ids=row.run_ids, valid_from=row.updated_at,
                                valid_to=now))
    row.run_ids, row.updated_at = ids, now
    session.flush()
    return row



def drop_run(rows: list[Baseline], run_id: int) -> None:
    """The run leaves these baselines' run sets (the run is being deleted)."""
    for row in rows:
        row.run_ids = [i for i in row.run_ids if i != run_id]

def delete(session: Session, bench_name: str, name: str) -> None:
    session.delete(get_or_404(session, bench_name, name))
    session.flush()


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


def run_ids_of(session: Session, bench_id: int, name: str) -> list[int] | None:
    row = session.execute(select(Baseline.run_ids).where(Baseline.benchmark_id == bench_id,
                                                         Baseline.name == name)).first()
    return list(row[0]) if row is not None else None


def newest(session: Session, bench_ids: list[int]) -> dict[int, Baseline]:
    """The most recently updated baseline of each benchmark."""
    out: dict[int, Baseline] = {}
    for b in session.scalars(select(Baseline).where(Baseline.benchmark_id.in_(bench_ids))
                             .order_by(Baseline.updated_at)):
        out[b.benchmark_id] = b
    return out
