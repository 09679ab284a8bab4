"""A full alert re-evaluation (a durable job) and its progress, and an interleaved experiment's
stored plan."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from .base import NAME, Base


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


class ExperimentPlan(Base):
    """What an interleaved experiment was planned with, stored with its first run: the looks
    of its sequential rule (spec/api.md, One experiment one answer). A later run that names
    other looks is refused; the verdict is judged at these."""

    __tablename__ = "experiment_plans"
    experiment_id: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    looks: Mapped[int | None] = mapped_column(Integer)  # None: the first run named none
    first_run_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
