"""Rows of the full alert re-evaluations (their progress) and of the experiments' stored plans."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import AlertEvaluation, Benchmark, ExperimentPlan, Series


def add(session: Session, benchmark: str | None) -> AlertEvaluation:
    row = AlertEvaluation(benchmark=benchmark, state="pending", done_series=0, runs=0, new=[],
                          created_at=datetime.now(timezone.utc))
    session.add(row)
    session.flush()
    return row


def get(session: Session, evaluation_id: int, lock: bool = False) -> AlertEvaluation | None:
    if lock:  # one worker at a time moves an evaluation on (a retried job beside a slow one)
        return session.scalar(select(AlertEvaluation).where(AlertEvaluation.id == evaluation_id)
                              .with_for_update())
    return session.get(AlertEvaluation, evaluation_id)


def mark_running(row: AlertEvaluation, total_series: int) -> None:
    """The job took the evaluation: `running`, with how many series it judges (the first start
    time kept across retries)."""
    row.state, row.total_series = "running", total_series
    row.started_at = row.started_at or datetime.now(timezone.utc)


def record_series(row: AlertEvaluation, series_key: tuple[int, int], runs: int,
                  new: list[int]) -> None:
    """One more series judged: its key (where a retry goes on), its runs and its new alerts."""
    row.done_series, row.runs = row.done_series + 1, row.runs + runs
    row.last_series, row.new = list(series_key), list(row.new or []) + new


def mark_done(row: AlertEvaluation) -> None:
    row.state, row.finished_at = "done", datetime.now(timezone.utc)


def mark_failed(row: AlertEvaluation, error: str) -> None:
    row.state, row.error = "failed", error[:1000]
    row.finished_at = datetime.now(timezone.utc)


def series_keys(session: Session, bench_ids: list[int]) -> list[tuple[int, int]]:
    """(benchmark id, series id) of every series of the benchmarks, in the order judged."""
    return [(int(b), int(s)) for b, s in session.execute(
        select(Series.benchmark_id, Series.id).where(Series.benchmark_id.in_(bench_ids))
        .order_by(Series.benchmark_id, Series.id))]


def benchmark(session: Session, bench_id: int) -> Benchmark | None:
    return session.get(Benchmark, bench_id)


def plans(session: Session, experiment_ids: set[str]) -> dict[str, ExperimentPlan]:
    if not experiment_ids:
        return {}
    return {p.experiment_id: p for p in session.scalars(
        select(ExperimentPlan).where(ExperimentPlan.experiment_id.in_(sorted(experiment_ids))))}
