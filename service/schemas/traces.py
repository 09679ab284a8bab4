"""Trace files and their analysis state."""
from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
)

from .runs import TraceState


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
