"""Curation of a series' metric by people: an expected change point (the reference level moves
from its run on) or a mute (the metric is shown but does not decide, until it expires). Kept for
the audit: who, when and why, and who withdrew it and when."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ..models.base import NAME, Base

NOTE_MAX = 1000


class Curation(Base):
    __tablename__ = "curations"
    __table_args__ = (Index("ix_curations_series_metric", "series_id", "metric"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              nullable=False, index=True)
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"),
                                           nullable=False)
    metric: Mapped[str] = mapped_column(String(NAME), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # expected | mute
    run_id: Mapped[int | None] = mapped_column(Integer)  # expected: the new level's first run
    note: Mapped[str] = mapped_column(String(NOTE_MAX), nullable=False)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # mute
    created_by: Mapped[str] = mapped_column(String(NAME), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    withdrawn_by: Mapped[str | None] = mapped_column(String(NAME))
    withdrawn_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
