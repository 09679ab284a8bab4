"""The alerts' rows, and the full re-evaluations' rows (their progress)."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import Benchmark, Series
from .tables import Alert, AlertEvaluation


def of_series(session: Session, series_id: int, metric: str) -> list[Alert]:
    return list(session.scalars(select(Alert).where(Alert.series_id == series_id,
                                                    Alert.metric == metric)))


def add(session: Session, **fields) -> Alert:
    """A new open alert (not yet delivered) with these fields."""
    now = datetime.now(timezone.utc)
    alert = Alert(**fields, state="open", created_at=now, updated_at=now, webhook_attempts=0)
    session.add(alert)
    session.flush()
    return alert


def get(session: Session, alert_id: int) -> Alert | None:
    return session.get(Alert, alert_id)


def list_alerts(session: Session, bench_id: int | None = None, state: str | None = None,
                limit: int = 500) -> tuple[list[Alert], int]:
    q = select(Alert)
    if bench_id is not None:
        q = q.where(Alert.benchmark_id == bench_id)
    if state:
        q = q.where(Alert.state == state)
    count = session.scalar(select(func.count()).select_from(q.subquery())) or 0
    rows = list(session.scalars(q.order_by(Alert.created_at.desc(), Alert.id.desc()).limit(limit)))
    return rows, int(count)


def undelivered(session: Session, webhook: bool, github: bool,
                ids: list[int] | None = None) -> list[tuple[int, bool, bool]]:
    """(id, webhook due, GitHub issue due) of every open alert that has not gone out to a
    destination asked for (of `ids` alone where given), oldest first: ids and two flags a row,
    however many alerts are open."""
    if not webhook and not github:
        return []
    wh = Alert.webhook_delivered_at.is_(None)
    gh = Alert.github_issue.is_(None)
    q = select(Alert.id, wh, gh).where(Alert.state == "open")
    q = q.where(wh | gh) if webhook and github else q.where(wh if webhook else gh)
    if ids is not None:
        q = q.where(Alert.id.in_(ids))
    return [(i, bool(w) and webhook, bool(g) and github)
            for i, w, g in session.execute(q.order_by(Alert.id))]


def open_counts(session: Session) -> dict[int, int]:
    """Open alerts per benchmark id."""
    q = select(Alert.benchmark_id, func.count()).where(Alert.state == "open") \
        .group_by(Alert.benchmark_id)
    return {int(b): int(n) for b, n in session.execute(q)}


def benchmark_names(session: Session, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    return dict(session.execute(select(Benchmark.id, Benchmark.name).where(Benchmark.id.in_(ids))).all())


def bisect_commands(session: Session, ids: set[int]) -> dict[int, str | None]:
    if not ids:
        return {}
    return dict(session.execute(select(Benchmark.id, Benchmark.bisect_command)
                                .where(Benchmark.id.in_(ids))).all())


def set_state(alert: Alert, state: str) -> None:
    """A person moved the alert to `state` (open, acknowledged, resolved), now."""
    alert.state = state
    alert.updated_at = datetime.now(timezone.utc)


def record_webhook(alert: Alert, err: str | None) -> None:
    """One webhook attempt of the alert: delivered now when `err` is None, else its error."""
    alert.webhook_attempts += 1
    if err is None:
        alert.webhook_delivered_at = datetime.now(timezone.utc)
    alert.notify_error = err


def record_issue(alert: Alert, issue: int | None, err: str | None) -> None:
    """The alert's GitHub issue number (when one was opened or found), or the error of trying;
    an earlier error stays when this attempt has none."""
    if issue:
        alert.github_issue = issue
    alert.notify_error = err[:1000] if err else alert.notify_error


# The full re-evaluations (POST /api/v1/alerts/evaluate) and their progress.

def add_evaluation(session: Session, benchmark: str | None) -> AlertEvaluation:
    row = AlertEvaluation(benchmark=benchmark, state="pending", done_series=0, runs=0, new=[],
                          created_at=datetime.now(timezone.utc))
    session.add(row)
    session.flush()
    return row


def get_evaluation(session: Session, evaluation_id: int, lock: bool = False
                   ) -> AlertEvaluation | None:
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


def benchmark_row(session: Session, bench_id: int) -> Benchmark | None:
    return session.get(Benchmark, bench_id)
