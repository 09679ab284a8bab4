"""Alerts: change points of default-branch histories that reach people (spec/api.md v1.1)."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from ...db import transaction
from ...jobs import tasks
from ...schemas import AlertList, AlertOut, AlertPatch, AlertsEvaluated
from ...usecases import alerts
from ..deps import (
    ERRORS,
    AdminAccess,
    ReadAccess,
    SessionDep,
    WriteAccess,
)

router = APIRouter(prefix="/api/v1", tags=["alerts"])
Str200 = Annotated[str | None, Query(max_length=200)]
Id = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.get("/alerts", response_model=AlertList, dependencies=[ReadAccess],
            responses=ERRORS)
def list_alerts(request: Request, session: SessionDep, benchmark: Str200 = None,
                state: Str200 = None):
    """Alerts, newest first; filter by benchmark and state (open, acknowledged, closed)."""
    return alerts.list_alerts(session, benchmark, state, request.app.state.settings)


@router.patch("/alerts/{alert_id}", response_model=AlertOut, dependencies=[WriteAccess],
              responses=ERRORS)
def patch_alert(request: Request, alert_id: Id, body: AlertPatch, session: SessionDep):
    """Acknowledge or close an alert (or open it again)."""
    return alerts.set_state(session, alert_id, body.state, request.app.state.settings)


@router.post("/alerts/evaluate", response_model=AlertsEvaluated,
             dependencies=[AdminAccess], responses=ERRORS)
def evaluate(request: Request, benchmark: Str200 = None):
    """Look at the default-branch histories again: new change points raise alerts (an alert
    already raised is never raised twice); undelivered notifications are queued again."""
    state = request.app.state
    with transaction(state.sessions) as session:
        new = alerts.evaluate(session, benchmark)
    tasks.enqueue_deliveries(state.queue, state.sessions, state.settings)
    return {"new": new}
