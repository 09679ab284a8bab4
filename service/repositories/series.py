"""Series rows: runs of one benchmark with the same config, GPU model and count."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import Series


def series_rows(session: Session, ids: set[int]) -> dict[int, Series]:
    if not ids:
        return {}
    return {s.id: s for s in session.scalars(select(Series).where(Series.id.in_(ids)))}



def series_of_benchmark(session: Session, bench_id: int) -> list[Series]:
    return list(session.scalars(select(Series).where(Series.benchmark_id == bench_id)
                                .order_by(Series.id)))


def lock(session: Session, ids: set[int] | list[int]) -> None:
    """Hold these series' rows until the transaction ends (PostgreSQL: FOR UPDATE, in id order,
    so two judges of one series take turns and never deadlock; SQLite: its one write lock does
    it). Whoever judges a series' runs takes it before reading the series' state or alerts."""
    ordered = sorted(ids)
    for at in range(0, len(ordered), 1000):
        session.execute(select(Series.id).where(Series.id.in_(ordered[at:at + 1000]))
                        .order_by(Series.id).with_for_update())
