"""Benchmarks, their series (one config on one GPU model and count) and the metric registry rows."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from .base import NAME, Base


class Benchmark(Base):
    __tablename__ = "benchmarks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # history, noise and change points read this branch (None: "main")
    default_branch: Mapped[str | None] = mapped_column(String(NAME))
    # what CMD an alert's `perfwarden bisect ... -- CMD` line runs (None: `<collect command>`)
    bisect_command: Mapped[str | None] = mapped_column(String(4096))


class Series(Base):
    """Runs of one benchmark with the same config and the same GPU model and count."""

    __tablename__ = "series"
    __table_args__ = (UniqueConstraint("benchmark_id", "config_hash", "gpu", "gpu_count",
                                       name="uq_series_identity"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              nullable=False, index=True)
    config: Mapped[dict] = mapped_column(JSON, nullable=False)
    config_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    gpu: Mapped[str] = mapped_column(String(NAME), nullable=False, default="")
    gpu_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class MetricDef(Base):
    """The metric registry (spec/metrics.md): unit, direction and default gate threshold."""

    __tablename__ = "metric_registry"
    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    unit: Mapped[str] = mapped_column(String(32), nullable=False)
    direction: Mapped[str] = mapped_column(String(8), nullable=False)
    threshold_pct: Mapped[float] = mapped_column(Float, nullable=False)
    exact: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    gated: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    builtin: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class BenchmarkCount(Base):
    """A benchmark's run count, newest run id and newest run time, kept by triggers on `runs`
    (migration 0015), never written here. Each PostgreSQL connection adds to a shard of its own
    (its backend pid modulo 16), so concurrent ingests of one benchmark never wait for each
    other; a reader sums the runs and takes the largest id and time. After a delete every shard
    is clamped to what remains."""

    __tablename__ = "benchmark_counts"
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id", ondelete="CASCADE"),
                                              primary_key=True)
    shard: Mapped[int] = mapped_column(Integer, primary_key=True)
    runs: Mapped[int] = mapped_column(Integer, nullable=False)
    top: Mapped[int | None] = mapped_column(Integer)
    latest: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
