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
