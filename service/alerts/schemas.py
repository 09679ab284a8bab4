"""Alerts raised by change points."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
)


class AlertOut(BaseModel):
    """An alert (spec/api.md, "Alerts"): a change point of a default-branch series in the
    metric's worse direction, between the last good run (`good_run_id`, `good_commit`) and the
    first bad run (`run_id`, `commit`)."""

    id: int
    benchmark: str
    series_id: int
    series: str
    config: dict[str, Any]
    metric: str
    branch: str
    state: Literal["open", "acknowledged", "closed"]
    run_id: int
    good_run_id: int | None
    commit: str | None
    good_commit: str | None
    last_good: str  # "run 41 at commit abc1234", or plainly why it is unknown
    first_bad: str
    before: float
    after: float
    delta_pct: float
    created_at: str | None
    updated_at: str | None
    url: str
    bisect: str | None
    bisect_note: str | None  # why there is no bisect line, where there is none
    webhook_delivered_at: str | None
    github_issue: int | None
    notify_error: str | None


class AlertList(BaseModel):
    alerts: list[AlertOut]
    count: int


class AlertPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state: Literal["open", "acknowledged", "closed"]


class EvaluationProgress(BaseModel):
    series_done: int
    series_total: int | None  # known once the job has started
    runs: int  # runs judged so far


class AlertEvaluationOut(BaseModel):
    """A full re-evaluation of the default-branch histories (a durable job): `pending` until a
    worker takes it, `running` series by series, then `done` (or `failed` with `error`); `new`,
    the alerts it raised so far."""

    id: int
    benchmark: str | None
    state: Literal["pending", "running", "done", "failed"]
    progress: EvaluationProgress
    new: list[int]
    error: str | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
