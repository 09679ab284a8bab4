"""Trace files of a run and their analysis state."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Integer,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..models.base import NAME, Base


class TraceFile(Base):
    __tablename__ = "traces"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False,
                                        index=True)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    filename: Mapped[str] = mapped_column(String(NAME), nullable=False)
    size_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    format: Mapped[str] = mapped_column(String(16), nullable=False)
    summary: Mapped[dict] = mapped_column(JSON, nullable=False)  # {} until analyzed
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # pending, done, failed (analysis is a durable job); NULL: stored before jobs, so done
    state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    error: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    set_size: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # which trace of the run the file belongs to (a set of ranks of one capture): 0 (NULL) the
    # run's own, whose summary is the run's; another phase or capture 1, 2, ... with its phase
    # and, once its files are all done, the set's summary on each of them
    trace_group: Mapped[int | None] = mapped_column(Integer, nullable=True)
    phase: Mapped[str | None] = mapped_column(String(16), nullable=True)
    group_summary: Mapped[dict | None] = mapped_column(JSON, nullable=True)
