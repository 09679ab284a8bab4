"""History: change points and noise."""
from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
)


class ChangePointOut(BaseModel):
    index: int
    before_mean: float
    after_mean: float
    delta_pct: float
    run_id: int
    started_at: str | None
    commit: str | None


class SeriesChangePoints(BaseModel):
    series_id: int
    config: dict[str, Any]
    gpu: str
    gpu_count: int
    change_points: list[ChangePointOut]


class ChangePointsOut(BaseModel):
    benchmark: str
    metric: str
    branch: str
    series: list[SeriesChangePoints]


class NoiseRow(BaseModel):
    series_id: int
    config: dict[str, Any]
    gpu: str
    runs: int
    trials_per_run: int
    mean: float | None
    run_to_run_cv_pct: float | None
    trial_cv_pct: float | None
    block_cv_pct: float | None
    min_detectable_pct: float | None
    min_detectable_pct_pooled: float | None


class NoiseCardOut(BaseModel):
    """A series' noise card (its default-branch history of one metric): the measured run-to-run
    spread, the clock modes its run levels show, the share of A/A gates drawn from it that say
    `regression` (`aa_false_alarm_pct`, keyed by runs a side), and the smallest change a gate can
    detect at 80% power (`detectable_pct`, keyed by runs a side)."""

    series_id: int
    series: str
    metric: str
    runs: int
    run_to_run_cv_pct: float | None
    modes: int | None
    aa_false_alarm_pct: dict[str, float]
    aa_draws: int
    detectable_pct: dict[str, float]
    line: str


class NoiseOut(BaseModel):
    benchmark: str
    metric: str
    branch: str | None
    baseline: str | None
    series: list[NoiseRow]
    cards: list[NoiseCardOut] = []  # of the default-branch history (no baseline asked)

