"""Alert rows."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import Alert, Benchmark


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
