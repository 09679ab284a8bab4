"""An interleaved experiment's stored plan."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ..models.base import NAME, Base


class ExperimentPlan(Base):
    """What an interleaved experiment was planned with, stored with its first run: the looks
    of its sequential rule and the question its runner asked (metrics, thresholds, vary;
    spec/api.md, One experiment one answer). A later run that names other looks or another
    question is refused; the verdict is judged at these, for every asker that names none."""

    __tablename__ = "experiment_plans"
    experiment_id: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    looks: Mapped[int | None] = mapped_column(Integer)  # None: the first run named none
    question: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # None: the first run asked none
    first_run_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
