"""Alerts raised by change points."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from .base import NAME, Base


class Alert(Base):
    """A change point of a series' default-branch history in the worse direction (spec/api.md,
    "Alerts"): raised once, identified by series, metric and first bad run."""

    __tablename__ = "alerts"
    __table_args__ = (UniqueConstraint("series_id", "metric", "run_id", name="uq_alert_change"),
                      Index("ix_alerts_benchmark_state", "benchmark_id", "state"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              nullable=False)
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"),
                                           nullable=False)
    metric: Mapped[str] = mapped_column(String(NAME), nullable=False)
    branch: Mapped[str] = mapped_column(String(NAME), nullable=False)
    run_id: Mapped[int] = mapped_column(Integer, nullable=False)  # first run after the change
    good_run_id: Mapped[int | None] = mapped_column(Integer)  # last run before it
    commit: Mapped[str | None] = mapped_column(String(NAME))
    good_commit: Mapped[str | None] = mapped_column(String(NAME))
    before: Mapped[float] = mapped_column(Float, nullable=False)
    after: Mapped[float] = mapped_column(Float, nullable=False)
    delta_pct: Mapped[float] = mapped_column(Float, nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False, default="open")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    webhook_delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    webhook_attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    github_issue: Mapped[int | None] = mapped_column(Integer)
    notify_error: Mapped[str | None] = mapped_column(String(1000))
