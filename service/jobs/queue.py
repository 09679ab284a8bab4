"""Where jobs go: `open_queue(settings, sessions)` gives the PostgreSQL queue (procrastinate) or
the embedded one (the SQLite jobs table); both take the same kinds and arguments."""
from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from ..config import Settings
from .pg import PgQueue
from .table import TableQueue


class Queue(Protocol):
    def enqueue(self, kind: str, args: dict[str, Any], coalesce: str | None = None,
                after_s: float = 0.0) -> bool:
        """Add a job, due in `after_s` seconds; False when a waiting job of the same `coalesce`
        key stands for it."""

    def close(self) -> None: ...


def open_queue(settings: Settings, sessions: sessionmaker[Session]) -> Queue:
    if settings.is_sqlite:
        return TableQueue(settings, sessions)

    return PgQueue(settings)
