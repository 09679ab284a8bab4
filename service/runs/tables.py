"""Runs, their samples and their per-metric figures."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ..models.base import NAME, Base
from ..models.benchmarks import Benchmark


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_benchmark_started", "benchmark_id", "started_at"),
                      Index("ix_runs_series_started", "series_id", "started_at"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              nullable=False)
    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"),
                                           nullable=False)
    config: Mapped[dict] = mapped_column(JSON, nullable=False)
    commit: Mapped[str | None] = mapped_column(String(NAME), index=True)
    branch: Mapped[str | None] = mapped_column(String(NAME), index=True)
    label: Mapped[str | None] = mapped_column(String(NAME), index=True)
    repository: Mapped[str | None] = mapped_column(String(NAME))
    pr: Mapped[int | None] = mapped_column(Integer)
    hardware: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    environment: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    idempotency_key: Mapped[str | None] = mapped_column(String(NAME), unique=True)
    body_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    determinism: Mapped[dict | None] = mapped_column(JSON)
    trace_summary: Mapped[dict | None] = mapped_column(JSON)
    extra: Mapped[dict] = mapped_column(JSON, nullable=False, default=dict)
    # one arm of an interleaved A/B experiment (spec/api.md, "Experiments")
    experiment_id: Mapped[str | None] = mapped_column(String(NAME), index=True)
    experiment_arm: Mapped[str | None] = mapped_column(String(16))
    experiment_block: Mapped[int | None] = mapped_column(Integer)
    # planned looks (spec/api.md, One experiment one answer)
    experiment_looks: Mapped[int | None] = mapped_column(Integer)
    # posted during `perfwarden bisect` ({id, commit}): never part of a history (spec/api.md,
    # bisect)
    bisect_id: Mapped[str | None] = mapped_column(String(NAME), index=True)
    bisect: Mapped[dict | None] = mapped_column(JSON(none_as_null=True))

    benchmark: Mapped[Benchmark] = relationship(lazy="joined")
    stats: Mapped[list[RunMetric]] = relationship(back_populates="run", lazy="selectin",
                                                    cascade="all, delete-orphan")


class Sample(Base):
    """One sample (trial) of one metric of one run: SQL can aggregate over these."""

    __tablename__ = "samples"
    __table_args__ = (Index("ix_samples_run_metric", "run_id", "metric"),)
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)
    metric: Mapped[str] = mapped_column(String(NAME), nullable=False)
    trial: Mapped[int] = mapped_column(Integer, nullable=False)
    value: Mapped[float] = mapped_column(Float, nullable=False)


class RunMetric(Base):
    """Per run and metric: n, mean, median, stdev (kept with the samples, for fast pages)."""

    __tablename__ = "run_metrics"
    __table_args__ = (UniqueConstraint("run_id", "metric", name="uq_run_metric"),
                      Index("ix_run_metrics_metric_run", "metric", "run_id"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)
    metric: Mapped[str] = mapped_column(String(NAME), nullable=False)
    unit: Mapped[str] = mapped_column(String(32), nullable=False)
    direction: Mapped[str] = mapped_column(String(8), nullable=False)
    n: Mapped[int] = mapped_column(Integer, nullable=False)
    mean: Mapped[float] = mapped_column(Float, nullable=False)
    median: Mapped[float] = mapped_column(Float, nullable=False)
    stdev: Mapped[float | None] = mapped_column(Float)
    run: Mapped[Run] = relationship(back_populates="stats")
