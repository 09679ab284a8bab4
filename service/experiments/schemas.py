"""Interleaved A/B experiments."""
from __future__ import annotations

from pydantic import (
    BaseModel,
)

from ..gate.schemas import GateOut


class ExperimentRun(BaseModel):
    run_id: int
    series_id: int
    cell: str  # the series without the keys the arms set apart
    started_at: str | None
    tok_s_mean: float | None


class ExperimentBlock(BaseModel):
    block: int
    order: list[str]
    baseline: list[ExperimentRun]
    candidate: list[ExperimentRun]


class ExperimentOut(BaseModel):
    id: str
    benchmark: str
    runs: int
    blocks: list[ExperimentBlock]
    verdict: GateOut
