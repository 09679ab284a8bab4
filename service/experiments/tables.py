"""An interleaved experiment's stored plan."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ..models.base import NAME, Base


class ExperimentPlan(Base):
    """What an interleaved experiment was planned with, stored with its first run: the looks
    of its sequential rule (spec/api.md, One experiment one answer). A later run that names
    other looks is refused; the verdict is judged at these."""

    __tablename__ = "experiment_plans"
    experiment_id: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    looks: Mapped[int | None] = mapped_column(Integer)  # None: the first run named none
    first_run_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
