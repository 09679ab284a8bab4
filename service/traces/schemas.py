"""Trace files and their analysis state."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
)

from ..runs.schemas import TraceState


class TraceOut(BaseModel):
    id: int
    run_id: int
    sha256: str
    filename: str
    size_bytes: int
    format: str
    summary: dict[str, Any] | None  # None until the analysis job is done
    set_files: int = 1  # trace files its set (the run's own, group 0) holds now
    state: TraceState = "done"
    error: str | None = None  # why the analysis failed


class StagedTraceOut(BaseModel):
    """A staged trace file (`POST /api/v1/traces/stage`): a run batch names it by `sha256`."""

    sha256: str
    filename: str
    size_bytes: int
    format: str


class TimelineStep(BaseModel):
    step: int
    name: str
    start_us: float  # from the first step's start
    end_us: float


class TimelineOp(BaseModel):
    step: int
    device: int
    stream: int
    role: Literal["main", "aux", "other"]
    name: str
    start_us: float
    end_us: float


class TimelineStream(BaseModel):
    device: int
    stream: int
    role: Literal["main", "aux", "other"]


class TimelineOut(BaseModel):
    """`GET /api/v1/traces/{id}/timeline`: per-stream op intervals of a few decode steps."""

    trace_id: int
    steps: list[TimelineStep]
    ops: list[TimelineOp]
    streams: list[TimelineStream]
    total_steps: int  # the decode steps the trace holds (`steps` shows the first few)
    min_gap_us: float | None = None  # the idle gap the analysis counts from; None: no step
