"""Trace rows: a run's trace files, their analysis state and summary."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from ..runs.queries import lock_run as lock
from ..runs.tables import Run
from .tables import TraceFile


def run(session: Session, run_id: int) -> Run | None:
    return session.get(Run, run_id)


def lock_run(session: Session, run_id: int) -> None:
    """Hold the run's row until the transaction ends (runs.lock_run says how, per database)."""

    lock(session, run_id)


def get(session: Session, trace_id: int) -> TraceFile | None:
    return session.get(TraceFile, trace_id)


def add(session: Session, run_id: int, sha: str, name: str, size: int, fmt: str,
        summary: dict[str, Any], now: datetime, state: str | None = None,
        set_size: int | None = None, group: int = 0, phase: str | None = None) -> TraceFile:
    row = TraceFile(run_id=run_id, sha256=sha, filename=name, size_bytes=size, format=fmt,
                    summary=summary, created_at=now, state=state, set_size=set_size,
                    trace_group=group or None, phase=phase)
    session.add(row)
    session.flush()
    return row



def mark_done(row: TraceFile, fmt: str, summary: dict[str, Any]) -> None:
    """The trace analyzed: its format and summary, no error."""
    row.format, row.summary, row.state, row.error = fmt, summary, "done", None


def mark_failed(row: TraceFile, error: str) -> None:
    """The trace's analysis failed, with the reason (its first 1,000 characters)."""
    row.state, row.error = "failed", error[:1000]


def set_run_summary(run: Run, summary: dict[str, Any]) -> None:
    """The run's trace summary: its set's, once the set is complete."""
    run.trace_summary = summary


def set_group_summary(rows: list[TraceFile], summary: dict[str, Any]) -> None:
    """The summary of a trace group other than the run's own (another phase or capture), kept
    on each of its files."""
    for t in rows:
        t.group_summary = summary


def open_set_shas(session: Session, shas: list[str]) -> set[str]:
    """Of `shas`, those a trace set still being assembled holds: its run has a trace pending, or
    fewer traces than its set size, and none failed (a failed rank ends the set)."""
    if not shas:
        return set()
    t = TraceFile.__table__.c
    flag = (lambda state: func.sum(case((t.state == state, 1), else_=0)))
    group = func.coalesce(t.trace_group, 0)
    open_sets = (select(t.run_id, group.label("grp")).group_by(t.run_id, group)
                 .having(flag("failed") == 0)
                 .having((flag("pending") > 0)
                         | (func.count() < func.max(func.coalesce(t.set_size, 1))))
                 .subquery())
    rows = session.execute(select(t.sha256).join(
        open_sets, (open_sets.c.run_id == t.run_id) & (open_sets.c.grp == group))
        .where(t.sha256.in_(shas)).distinct())
    return {r[0] for r in rows}
