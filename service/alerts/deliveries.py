"""Alert deliveries, one durable job each: the webhook POST and the GitHub issue (spec/api.md,
"Alerts"). Each records its outcome on the alert; a transient failure raises `Transient` so the
queue tries again with backoff.

Exactly once, honestly: a worker killed after the receiver took the POST and before the alert
recorded it sends it again when the job is resumed. Every POST of one alert carries the same
`X-Perfwarden-Delivery` id, so a receiver that keeps the ids it has accepted sees one delivery
(at-least-once sending, exactly-once effect for a deduplicating receiver). A kill before the
POST sends it once. The GitHub issue is found again by its hidden marker, so a resumed job never
opens a second one."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx

from .. import outbound
from ..config import Settings
from ..db import SessionFactory, transaction
from . import lifecycle
from . import queries as repo

DELIVERY_HEADER = "X-Perfwarden-Delivery"
log = logging.getLogger("perfwarden.alerts")


class Transient(RuntimeError):
    """A delivery that may succeed later (5xx, 408, 429, unreachable): retried with backoff."""


def delivery_id(alert_id: int) -> str:
    return f"alert-{alert_id}-webhook"


def due(sessions: SessionFactory, settings: Settings,
        ids: list[int] | None = None) -> list[tuple[str, int]]:
    """(kind, alert id) of what has not gone out yet for the open alerts (or those of `ids`):
    every one of them, however many are open."""
    with transaction(sessions) as session:
        rows = repo.undelivered(session, bool(settings.alert_webhook),
                                bool(settings.alert_github_repo), ids)
    out: list[tuple[str, int]] = []
    for alert_id, webhook_due, issue_due in rows:
        if webhook_due:
            out.append(("webhook", alert_id))
        if issue_due:
            out.append(("github_issue", alert_id))
    return out


def _out(sessions: SessionFactory, settings: Settings, alert_id: int
         ) -> dict[str, Any] | None:
    with transaction(sessions) as session:
        a = repo.get(session, alert_id)
        return lifecycle.to_out(session, [a], settings)[0] if a is not None else None


def webhook(sessions: SessionFactory, settings: Settings, alert_id: int,
            pause: Callable[[str], None] = lambda _: None) -> None:
    """POST the alert to the webhook once; the outcome is kept on the alert."""
    out = _out(sessions, settings, alert_id)
    if out is None or out["webhook_delivered_at"] is not None or not settings.alert_webhook:
        return
    url = settings.alert_webhook.get_secret_value()
    pause("webhook:before_post")
    err, transient = None, False
    try:
        r = outbound.request("POST", url, settings.delivery_timeout_s, json=lifecycle.payload(out),
                             headers={"User-Agent": "perfwarden",
                                      DELIVERY_HEADER: delivery_id(alert_id)})
        if not 200 <= r.status_code < 300:
            err = f"webhook answered {r.status_code}"
            transient = r.status_code >= 500 or r.status_code in (408, 429)
    except httpx.HTTPError as e:
        err, transient = f"webhook unreachable ({type(e).__name__})", True  # never the URL
    pause("webhook:after_post")
    with transaction(sessions) as session:
        a = repo.get(session, alert_id)
        if a is None:
            return
        repo.record_webhook(a, err)
    if err is not None:
        log.warning("alert %s webhook: %s", alert_id, err)
        if transient:
            raise Transient(err)


def github_issue(sessions: SessionFactory, settings: Settings, alert_id: int) -> None:
    """Open the alert's GitHub issue (or find it again by its marker) and keep its number."""
    out = _out(sessions, settings, alert_id)
    if out is None or out["github_issue"] is not None or not settings.alert_github_repo:
        return
    try:
        issue, err = lifecycle.open_issue(settings, out), None
    except Exception as e:  # noqa: BLE001 - kept on the alert, retried by the queue
        issue, err = None, f"GitHub: {e}"
    with transaction(sessions) as session:
        a = repo.get(session, alert_id)
        if a is None:
            return
        repo.record_issue(a, issue, err)
    if err is not None:
        raise Transient(err)
