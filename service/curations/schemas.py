"""Curation: an expected change point of a series' metric, or a mute of it, audited."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator, model_validator

from ..schemas.common import METRIC_NAME, Name, RunId

NOTE_MAX = 1000
MUTE_DAYS_MAX = 366


class CurationIn(BaseModel):
    """`expected`: the series' reference level moves from `run_id` on (the gate's history spread
    starts there, a matching open alert is closed); `mute`: the metric of the series is judged and
    shown but does not decide until `expires_at`. `note` says why (required)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["expected", "mute"]
    series_id: RunId
    metric: Name
    note: StrictStr = Field(min_length=1, max_length=NOTE_MAX)
    run_id: RunId | None = None
    expires_at: datetime | None = None

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        if not METRIC_NAME.match(v):
            raise ValueError("letters, digits and _ . : / - only")
        return v

    @field_validator("note")
    @classmethod
    def _note(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("say why")
        return v

    @model_validator(mode="after")
    def _kind_fields(self) -> CurationIn:
        if self.kind == "expected" and (self.run_id is None or self.expires_at is not None):
            raise ValueError("an expected change names its first run (run_id) and never expires")
        if self.kind == "mute" and (self.expires_at is None or self.run_id is not None):
            raise ValueError("a mute names when it expires (expires_at) and no run")
        if self.expires_at is not None and self.expires_at.tzinfo is None:
            raise ValueError("expires_at needs a time zone (e.g. 2027-01-31T00:00:00Z)")
        return self


class CurationOut(BaseModel):
    id: int
    benchmark: str
    series_id: int
    series: str  # the series as words
    config: dict[str, Any]
    metric: str
    kind: Literal["expected", "mute"]
    run_id: int | None
    commit: str | None  # the expected change's first run's commit
    note: str
    expires_at: str | None
    created_by: str
    created_at: str
    withdrawn_by: str | None
    withdrawn_at: str | None
    in_force: bool
    line: str  # one sentence: what, who, when, why
    closed_alerts: list[int] = []


class CurationList(BaseModel):
    data: list[CurationOut]
    count: int
