"""Stored summaries: what a benchmark's runs add up to (attribution, change points), computed by
the durable job that runs when runs arrive, read by the dashboard's pages (never refit on a
view). Each row says which runs it covers, so a page can tell a current summary from a stale one."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .base import NAME, Base


class Summary(Base):
    __tablename__ = "summaries"
    __table_args__ = (UniqueConstraint("benchmark_id", "kind", "metric", "label",
                                       name="uq_summary_identity"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              nullable=False)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)  # attribution, changepoints
    metric: Mapped[str] = mapped_column(String(NAME), nullable=False)
    label: Mapped[str] = mapped_column(String(NAME), nullable=False, default="")  # "": all runs
    # the runs it covers: their count and the newest id (a stored, deleted or re-posted run
    # changes one of them)
    runs: Mapped[int] = mapped_column(Integer, nullable=False)
    last_run_id: Mapped[int] = mapped_column(Integer, nullable=False)
    computed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    body: Mapped[dict] = mapped_column(JSON, nullable=False)
