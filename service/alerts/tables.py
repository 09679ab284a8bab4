"""The alerts' tables: the alerts raised by change points, and the full re-evaluations' progress."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..models.base import NAME, Base


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


class AlertEvaluation(Base):
    """`POST /api/v1/alerts/evaluate`: every default-branch series of a benchmark (or of all),
    judged again from its whole history, one series a transaction. `state` is pending, running,
    done or failed; `done_series` of `total_series` are judged (`last_series`, the series id
    judged last, is where a retried job goes on), over `runs` runs, raising the alerts `new`."""

    __tablename__ = "alert_evaluations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    benchmark: Mapped[str | None] = mapped_column(String(NAME))  # None: every benchmark
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    total_series: Mapped[int | None] = mapped_column(Integer)
    done_series: Mapped[int] = mapped_column(Integer, nullable=False)
    runs: Mapped[int] = mapped_column(Integer, nullable=False)
    last_series: Mapped[list | None] = mapped_column(JSON)  # [benchmark id, series id]
    new: Mapped[list] = mapped_column(JSON, nullable=False)
    error: Mapped[str | None] = mapped_column(String(1000))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
