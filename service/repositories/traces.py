"""Trace rows: a run's trace files, their analysis state and summary."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from ..models import Run, TraceFile


def run(session: Session, run_id: int) -> Run | None:
    return session.get(Run, run_id)


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
