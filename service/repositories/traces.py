"""Trace rows: a run's trace files, their analysis state and summary."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from ..models import Run, TraceFile


def run(session: Session, run_id: int) -> Run | None:
    return session.get(Run, run_id)


def lock_run(session: Session, run_id: int) -> None:
    """Hold the run's row until the transaction ends (PostgreSQL; SQLite has one writer)."""
    session.scalars(select(Run.id).where(Run.id == run_id).with_for_update()).first()


def get(session: Session, trace_id: int) -> TraceFile | None:
    return session.get(TraceFile, trace_id)


def add(session: Session, run_id: int, sha: str, name: str, size: int, fmt: str,
        summary: dict[str, Any], now: datetime, state: str | None = None,
        set_size: int | None = None) -> TraceFile:
    row = TraceFile(run_id=run_id, sha256=sha, filename=name, size_bytes=size, format=fmt,
                    summary=summary, created_at=now, state=state, set_size=set_size)
    session.add(row)
    session.flush()
    return row


def open_set_shas(session: Session, shas: list[str]) -> set[str]:
    """Of `shas`, those a trace set still being assembled holds: its run has a trace pending, or
    fewer traces than its set size, and none failed (a failed rank ends the set)."""
    if not shas:
        return set()
    t = TraceFile.__table__.c
    flag = (lambda state: func.sum(case((t.state == state, 1), else_=0)))
    open_runs = (select(t.run_id).group_by(t.run_id)
                 .having(flag("failed") == 0)
                 .having((flag("pending") > 0)
                         | (func.count() < func.max(func.coalesce(t.set_size, 1)))))
    rows = session.execute(select(t.sha256).where(t.sha256.in_(shas),
                                                  t.run_id.in_(open_runs)).distinct())
    return {r[0] for r in rows}
