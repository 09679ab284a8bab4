"""Stored summaries and the cheap indexed reads that tell whether one is current: the count and
newest id of the runs it covers. Repositories never commit: the caller owns the transaction."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from ..models import Benchmark, BenchmarkCount, Summary
from ..runs.tables import Run, RunMetric
from ..traces.tables import TraceFile

Coverage = tuple[int, int]  # (run count, newest run id)


def coverage(session: Session, bench_id: int, label: str = "") -> Coverage:
    """(count, newest id) of the benchmark's runs (kept by the triggers on `runs`), or of one label's
    (indexed: runs.label)."""
    q: Any
    if label:
        q = select(func.count(), func.max(Run.id)).where(Run.benchmark_id == bench_id,
                                                         Run.label == label)
    else:
        q = select(func.sum(BenchmarkCount.runs), func.max(BenchmarkCount.top)).where(
            BenchmarkCount.benchmark_id == bench_id)
    n, top = session.execute(q).first() or (0, 0)
    return int(n or 0), int(top or 0)


def label_coverage(session: Session, bench_id: int, labels: list[str]) -> dict[str, Coverage]:
    """Per label (of these): (count, newest id) of its runs in the benchmark."""
    if not labels:
        return {}
    rows = session.execute(select(Run.label, func.count(), func.max(Run.id))
                           .where(Run.benchmark_id == bench_id, Run.label.in_(labels))
                           .group_by(Run.label))
    return {str(label): (int(n), int(top)) for label, n, top in rows}


def labels_after(session: Session, bench_id: int, run_id: int, limit: int) -> list[str]:
    """The labels of the benchmark's runs newer than `run_id` (by id), newest first."""
    rows = session.execute(select(Run.label, func.max(Run.id).label("top"))
                           .where(Run.benchmark_id == bench_id, Run.id > run_id,
                                  Run.label.is_not(None))
                           .group_by(Run.label).order_by(func.max(Run.id).desc()).limit(limit))
    return [str(label) for label, _ in rows]


def metrics_of(session: Session, bench_id: int) -> list[str]:
    """Every metric the benchmark's runs carry."""
    return sorted(m for (m,) in session.execute(
        select(RunMetric.metric).join(Run, Run.id == RunMetric.run_id)
        .where(Run.benchmark_id == bench_id).distinct()))


def get(session: Session, bench_id: int, kind: str, metric: str, label: str = ""
        ) -> Summary | None:
    return session.scalars(select(Summary).where(
        Summary.benchmark_id == bench_id, Summary.kind == kind, Summary.metric == metric,
        Summary.label == label)).first()


def of_kind(session: Session, bench_id: int, kind: str) -> list[Summary]:
    return list(session.scalars(select(Summary).where(Summary.benchmark_id == bench_id,
                                                      Summary.kind == kind)))


def put(session: Session, bench_id: int, kind: str, metric: str, label: str, covers: Coverage,
        body: dict[str, Any], now: datetime) -> bool:
    """Store (or replace) one summary with the runs it covers, computed at `now`; one stored
    by a computation that began later is kept (False)."""
    row = get(session, bench_id, kind, metric, label)
    if row is None:
        row = Summary(benchmark_id=bench_id, kind=kind, metric=metric, label=label)
        session.add(row)
    elif row.computed_at is not None and _aware(row.computed_at) > now:
        return False
    row.runs, row.last_run_id, row.body, row.computed_at = covers[0], covers[1], body, now
    session.flush()
    return True


def _aware(t: datetime) -> datetime:
    """SQLite gives back naive datetimes (stored as UTC)."""
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def matrix_of_trace(session: Session, trace_id: int, kind: str) -> str | None:
    """The name of the benchmark of the trace's run where a summary of `kind` stored for it
    holds an answer (not a refusal); None elsewhere."""
    row = session.execute(
        select(Benchmark.name, Summary.body).join(Run, Run.benchmark_id == Benchmark.id)
        .join(TraceFile, TraceFile.run_id == Run.id)
        .join(Summary, (Summary.benchmark_id == Benchmark.id) & (Summary.kind == kind))
        .where(TraceFile.id == trace_id)).first()
    return None if row is None or "error" in (row[1] or {}) else str(row[0])


def every(session: Session, kinds: tuple[str, ...], metric: str,
          bench_ids: list[int] | None = None) -> dict[tuple[int, str], Any]:
    """The stored all-runs summaries (runs, last_run_id, body) of these kinds and this metric of
    every benchmark (of these, where given), by (benchmark id, kind), in one statement of plain
    rows."""
    q = select(Summary.benchmark_id, Summary.kind, Summary.runs, Summary.last_run_id,
               Summary.body).where(Summary.kind.in_(kinds), Summary.metric == metric,
                                   Summary.label == "")
    if bench_ids is not None:
        q = q.where(Summary.benchmark_id.in_(bench_ids))
    rows = session.execute(q)
    return {(s.benchmark_id, s.kind): s for s in rows}


def put_once(session: Session, bench_id: int, kind: str, metric: str, covers: Coverage,
             body: dict[str, Any], now: datetime) -> None:
    """put by a reader, as a cache: where a concurrent reader stored the same summary first,
    theirs is kept; where another transaction holds SQLite's write lock (a reading transaction
    cannot take it after a newer commit), nothing is stored and the next read judges again."""
    try:
        with session.begin_nested():
            put(session, bench_id, kind, metric, "", covers, body, now)
    except (IntegrityError, OperationalError):
        pass
