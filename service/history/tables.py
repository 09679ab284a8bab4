"""Stored alert-evaluation state: what the evaluation after each ingest needs from
a series' history, kept so that a batch costs the same at a million runs as at a thousand."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, DateTime, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ..models.base import NAME, Base
from ..runs.tables import Run

# the evaluation's "a record posted twice counts once" look-up (history rule)
Index("ix_runs_benchmark_body", Run.benchmark_id, Run.body_sha256)


class SeriesState(Base):
    """Per series and metric of the default-branch history: its newest runs (`window`: [run id,
    started_at as epoch seconds, run mean], oldest first), of which those from `start_run` on
    (the reference segment's start) are judged; the reference level once the judged part no
    longer starts with the reference segment; `runs`, how many runs the history holds (PELT's
    penalty grows with it, as on the whole history)."""

    __tablename__ = "series_states"
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"),
                                           primary_key=True)
    metric: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    branch: Mapped[str] = mapped_column(String(NAME), nullable=False)
    reference: Mapped[float | None] = mapped_column(Float)
    start_run: Mapped[int] = mapped_column(Integer, nullable=False)  # the judged part's first
    runs: Mapped[int] = mapped_column(Integer, nullable=False)  # in the history so far
    window: Mapped[list] = mapped_column(JSON, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class PendingEvaluation(Base):
    """A stored run the alert evaluation has not seen yet: written in the ingest's transaction,
    taken (deleted) by the evaluation's, so no run is missed or counted twice whatever order
    concurrent ingests commit in."""

    __tablename__ = "pending_evaluations"
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              nullable=False, index=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)
