"""Curations: rows written once, withdrawn by stamping who and when (never deleted, for the
audit)."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import event, func, or_, select
from sqlalchemy.orm import Session, SessionTransaction

from ..runs.tables import Run
from .tables import Curation

KEPT = "curations in force"  # session.info: in_force's answers, for one transaction


@event.listens_for(Session, "after_transaction_end")
def _forget(session: Session, _transaction: SessionTransaction) -> None:
    session.info.pop(KEPT, None)


def add(session: Session, **fields) -> Curation:
    row = Curation(**fields)
    session.add(row)
    session.flush()
    session.info.pop(KEPT, None)
    return row


def get(session: Session, curation_id: int) -> Curation | None:
    return session.get(Curation, curation_id)


def withdraw(session: Session, row: Curation, who: str, at: datetime) -> None:
    row.withdrawn_by, row.withdrawn_at = who, at
    session.flush()
    session.info.pop(KEPT, None)


def of_benchmark(session: Session, bench_id: int, active_at: datetime | None) -> list[Curation]:
    """A benchmark's curations, newest first; with `active_at`, only those in force then (not
    withdrawn, a mute not expired)."""
    q = select(Curation).where(Curation.benchmark_id == bench_id)
    if active_at is not None:
        q = q.where(Curation.withdrawn_at.is_(None),
                    or_(Curation.expires_at.is_(None), Curation.expires_at > active_at))
    return list(session.scalars(q.order_by(Curation.created_at.desc(), Curation.id.desc())))


def in_force(session: Session, series_ids: Iterable[int], now: datetime) -> list[Curation]:
    """The curations in force now of these series, oldest first; read once per transaction (one
    answer asks it for the same series several times)."""
    ids = tuple(sorted(set(series_ids)))
    if not ids:
        return []
    kept = session.info.setdefault(KEPT, {})
    if ids not in kept:
        q = (select(Curation).where(Curation.series_id.in_(ids), Curation.withdrawn_at.is_(None),
                                    or_(Curation.expires_at.is_(None), Curation.expires_at > now))
             .order_by(Curation.created_at, Curation.id))
        kept[ids] = list(session.scalars(q))
    return list(kept[ids])


def in_force_marks(session: Session, bench_ids: Iterable[int], now: datetime
                   ) -> dict[int, tuple[int, int]]:
    """Per benchmark, what its curations in force now add up to (their count and the sum of
    their ids), in one statement: a verdict stored with these marks is stale once a curation is
    added, withdrawn or expires. A benchmark with none is left out."""
    ids = sorted(set(bench_ids))
    if not ids:
        return {}
    q = (select(Curation.benchmark_id, func.count(Curation.id), func.sum(Curation.id))
         .where(Curation.benchmark_id.in_(ids), Curation.withdrawn_at.is_(None),
                or_(Curation.expires_at.is_(None), Curation.expires_at > now))
         .group_by(Curation.benchmark_id))
    return {int(b): (int(n), int(total)) for b, n, total in session.execute(q)}


def run_of(session: Session, run_id: int) -> Run | None:
    return session.get(Run, run_id)


def run_started(session: Session, run_ids: Iterable[int]) -> dict[int, datetime]:
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    return dict(session.execute(select(Run.id, Run.started_at).where(Run.id.in_(ids))).all())
