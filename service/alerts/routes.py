"""Alerts: change points of default-branch histories that reach people (spec/api.md)."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from ..api.deps import (
    AdminAccess,
    ReadAccess,
    SessionDep,
    SessionsDep,
    WriteAccess,
    errors,
)
from ..jobs import tasks
from . import lifecycle, reevaluation
from .schemas import AlertEvaluationOut, AlertList, AlertOut, AlertPatch

router = APIRouter(prefix="/api/v1", tags=["alerts"])
Str200 = Annotated[str | None, Query(max_length=200)]
Id = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.get("/alerts", response_model=AlertList, dependencies=[ReadAccess],
            responses=errors(401, 404, 422))
def list_alerts(request: Request, session: SessionDep, benchmark: Str200 = None,
                state: Str200 = None):
    """Alerts, newest first; filter by benchmark and state (open, acknowledged, closed)."""
    return lifecycle.list_alerts(session, benchmark, state, request.app.state.settings,
                              str(request.base_url))


@router.patch("/alerts/{alert_id}", response_model=AlertOut, dependencies=[WriteAccess],
              responses=errors(400, 401, 403, 404, 413, 415, 422))
def patch_alert(request: Request, alert_id: Id, body: AlertPatch, session: SessionDep):
    """Acknowledge or close an alert (or open it again)."""
    return lifecycle.set_state(session, alert_id, body.state, request.app.state.settings)


@router.post("/alerts/evaluate", status_code=202, response_model=AlertEvaluationOut,
             dependencies=[AdminAccess], responses=errors(401, 403, 404, 422))
def evaluate(request: Request, sessions: SessionsDep, benchmark: Str200 = None):
    """Judge the default-branch histories again, whole, as a durable job: `202` with the
    evaluation (`pending`); its progress at `GET /api/v1/alerts/evaluations/{id}`. New change
    points raise alerts (an alert already raised is never raised twice); undelivered
    notifications are queued again when it ends."""
    queue = request.app.state.queue
    return reevaluation.start(sessions, benchmark, lambda i: tasks.enqueue_reevaluation(queue, i))


@router.get("/alerts/evaluations/{evaluation_id}", response_model=AlertEvaluationOut,
            dependencies=[ReadAccess], responses=errors(401, 404, 422))
def evaluation(evaluation_id: Id, session: SessionDep):
    """A re-evaluation's state and progress (series judged of all, runs judged, alerts raised)."""
    return reevaluation.show(session, evaluation_id)
