"""Named baselines and their history."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ..models.base import NAME, Base
from ..models.benchmarks import Benchmark


class Baseline(Base):
    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("benchmark_id", "name", name="uq_baseline_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              nullable=False)
    name: Mapped[str] = mapped_column(String(NAME), nullable=False)
    run_ids: Mapped[list] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    benchmark: Mapped[Benchmark] = relationship(lazy="joined")


class BaselineHistory(Base):
    """Every run set a baseline has held, with when it was replaced."""

    __tablename__ = "baseline_history"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    baseline_id: Mapped[int] = mapped_column(ForeignKey("baselines.id", ondelete="CASCADE"),
                                             nullable=False, index=True)
    run_ids: Mapped[list] = mapped_column(JSON, nullable=False)
    valid_from: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    valid_to: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
