"""Alerts raised by change points."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
)


class AlertOut(BaseModel):
    """An alert (spec/api.md v1.1, "Alerts"): a change point of a default-branch series in the
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
    before: float
    after: float
    delta_pct: float
    created_at: str | None
    updated_at: str | None
    url: str
    bisect: str | None
    webhook_delivered_at: str | None
    github_issue: int | None
    notify_error: str | None


class AlertList(BaseModel):
    alerts: list[AlertOut]
    count: int


class AlertPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state: Literal["open", "acknowledged", "closed"]


class AlertsEvaluated(BaseModel):
    new: list[int]
