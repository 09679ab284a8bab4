"""ORM models. The schema changes only through Alembic (migrations/)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAME = 200


class Base(DeclarativeBase):
    pass


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
    # one arm of an interleaved A/B experiment (spec/api.md v1.1, "Experiments")
    experiment_id: Mapped[str | None] = mapped_column(String(NAME), index=True)
    experiment_arm: Mapped[str | None] = mapped_column(String(16))
    experiment_block: Mapped[int | None] = mapped_column(Integer)
    experiment_looks: Mapped[int | None] = mapped_column(Integer)  # planned looks (v1.2 item 4)
    # posted during `perfwarden bisect` ({id, commit}): never part of a history (spec item 8)
    bisect_id: Mapped[str | None] = mapped_column(String(NAME), index=True)
    bisect: Mapped[dict | None] = mapped_column(JSON(none_as_null=True))

    benchmark: Mapped[Benchmark] = relationship(lazy="joined")
    stats: Mapped[list[RunMetric]] = relationship(back_populates="run", lazy="selectin",
                                                    cascade="all, delete-orphan")


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


class TraceFile(Base):
    __tablename__ = "traces"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), nullable=False,
                                        index=True)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    filename: Mapped[str] = mapped_column(String(NAME), nullable=False)
    size_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    format: Mapped[str] = mapped_column(String(16), nullable=False)
    summary: Mapped[dict] = mapped_column(JSON, nullable=False)  # {} until analyzed
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # pending, done, failed (analysis is a durable job); NULL: stored before jobs, so done
    state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    error: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    set_size: Mapped[int | None] = mapped_column(Integer, nullable=True)


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


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), nullable=False)
    scope: Mapped[str] = mapped_column(String(8), nullable=False)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    revoked: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class PrComment(Base):
    """Where the bot's one comment per (repository, PR, benchmark, baseline) lives."""

    __tablename__ = "pr_comments"
    __table_args__ = (UniqueConstraint("repository", "pr", "benchmark", "baseline",
                                       name="uq_pr_comment"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository: Mapped[str] = mapped_column(String(NAME), nullable=False)
    pr: Mapped[int] = mapped_column(Integer, nullable=False)
    benchmark: Mapped[str] = mapped_column(String(NAME), nullable=False)
    baseline: Mapped[str] = mapped_column(String(NAME), nullable=False)
    comment_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    verdict: Mapped[str] = mapped_column(String(16), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)



class Alert(Base):
    """A change point of a series' default-branch history in the worse direction (spec/api.md
    v1.1, "Alerts"): raised once, identified by series, metric and first bad run."""

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


class Job(Base):
    """A durable job of the embedded (SQLite) queue; on PostgreSQL procrastinate keeps its own."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(64), nullable=False)
    args: Mapped[dict] = mapped_column(JSON, nullable=False)
    coalesce_key: Mapped[str | None] = mapped_column(String(300), nullable=True)
    state: Mapped[str] = mapped_column(String(16), nullable=False)  # todo, doing, done, failed
    attempts: Mapped[int] = mapped_column(Integer, nullable=False)
    max_attempts: Mapped[int] = mapped_column(Integer, nullable=False)
    run_after: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    locked_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    worker: Mapped[str | None] = mapped_column(String(100), nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


from .summary import Summary as Summary  # noqa: E402 (a resource module of its own)
