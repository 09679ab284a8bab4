"""The gate and the compare view: verdicts per metric."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ..curations.schemas import CurationOut
from ..history.schemas import NoiseCardOut
from ..schemas.common import FIXED_SERIES_KEYS, NAME_MAX, Name, RunId


class GateIn(BaseModel):
    """Candidate runs against a baseline, or (`experiment`) an experiment's candidate arm
    against its baseline arm."""

    model_config = ConfigDict(extra="forbid")
    benchmark: Name | None = None
    baseline: Name | None = None
    run_ids: Annotated[list[RunId], Field(min_length=1, max_length=1000)] | None = None
    experiment: Name | None = None
    max_looks: Annotated[int, Field(ge=1, le=1000)] = 1
    metrics: list[Annotated[str, Field(max_length=NAME_MAX)]] | None = None
    thresholds: dict[Annotated[str, Field(max_length=NAME_MAX)],
                     Annotated[float, Field(ge=0, le=1000)]] | None = None
    vary: Annotated[list[Annotated[str, Field(min_length=1, max_length=NAME_MAX)]],
                    Field(max_length=50)] | None = None

    @field_validator("vary")
    @classmethod
    def _vary(cls, v: list[str] | None) -> list[str] | None:
        for key in v or []:
            if key in FIXED_SERIES_KEYS:
                raise ValueError(f"{key!r} can never be varied: series never mix GPU models or "
                                 "counts")
        return v

    @model_validator(mode="after")
    def _which(self) -> GateIn:
        if self.experiment is None and (self.benchmark is None or self.baseline is None
                                        or not self.run_ids):
            raise ValueError("give benchmark, baseline and run_ids, or experiment")
        if self.experiment is not None and (self.baseline is not None or self.run_ids):
            raise ValueError("an experiment is judged against its own baseline arm: give "
                             "experiment alone (with metrics, thresholds, vary)")
        return self


class SideStats(BaseModel):
    runs: int
    n: int
    mean: float | None
    median: float | None
    stdev: float | None


class MetricVerdict(BaseModel):
    name: str
    direction: str
    unit: str = ""
    series: dict[str, Any]
    series_id: int | None = None
    baseline: SideStats
    candidate: SideStats
    delta_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    bound_pct: float | None = Field(None, description="one-sided 100*(1-alpha/looks)% bound on the "
                                    "worse side (95% at alpha 0.05 and one look)")
    p_value: float | None
    p_adjusted: float | None = None
    threshold_pct: float
    verdict: Literal["pass", "regression", "improvement", "inconclusive"]
    reason: str
    method: str = ""
    role: Literal["gate", "evidence"] = Field("gate", description="gate metrics decide the "
                                              "overall verdict; evidence metrics never do")
    spread_from: str | None = Field(None, description="where the run-to-run spread came from: "
                                    "baseline, history, candidate (its runs spread wider "
                                    "than the history) or blocks")
    spread_runs: int | None = None
    muted: str | None = Field(None, description="why, by whom and until when a person muted "
                              "this metric of this series: judged and shown, never deciding")


class FigureChange(BaseModel):
    """One kernel's time per step (or a lane figure) across the runs with traces."""

    key: str = Field(description="the kernel key (names normalized across producers) or the "
                     "summary key of a lane figure")
    name: str = Field(description="a kernel's name as one of the traces wrote it, or the lane "
                      "figure's")
    base_us: float = Field(description="mean over the baseline runs (us per step; the aux "
                           "idle gap: us)")
    candidate_us: float
    delta_us: float = Field(description="candidate minus baseline")
    ci_low_us: float | None = Field(description="the change's interval at the gate's level "
                                    "(the gate's estimator, in us); none for a new or gone "
                                    "kernel")
    ci_high_us: float | None
    p_value: float | None
    p_adjusted: float | None = Field(description="Benjamini-Hochberg over the kernels that "
                                     "could change materially (the lane figures apart)")
    significant: bool
    material: bool = Field(description="at least 1% of the baseline's step GPU time")
    status: Literal["changed", "new", "gone"]


class TraceEvidence(BaseModel):
    """The profiler evidence of one series across its runs with traces (spec/api.md, Trace
    evidence): the kernels and lane figures whose change is significant after correction and
    material, with intervals."""

    series: dict[str, Any]
    series_id: int | None = None
    baseline_run_ids: list[int]
    candidate_run_ids: list[int]
    step_gpu_time_us: float | None
    tested_kernels: int
    untested_kernels: int = 0
    correction: str
    note: str = Field("", description="why nothing was tested (too few runs with traces)")
    kernels: list[FigureChange] = Field(description="significant and material kernels only, "
                                        "largest change first")
    lanes: list[FigureChange] = Field(description="aux idle per step, aux idle gap and step "
                                      "GPU time, each with its test")


class Cause(BaseModel):
    """What most likely moved a verdict that did not pass, from what was measured."""

    kind: Literal["code", "environment", "configuration", "noise"]
    line: str = Field(description="one line: the cause and the evidence that decided it")


class GateOut(BaseModel):
    verdict: Literal["pass", "fail", "inconclusive"]
    benchmark: str
    baseline: str
    baseline_run_ids: list[int]
    candidate_run_ids: list[int]
    correction: str
    alpha: float
    looks: int = 1  # each look is judged at alpha / looks (a sequential experiment)
    vary: list[str] = []
    metrics: list[MetricVerdict]
    trace_evidence: list[TraceEvidence] = []
    cause: Cause | None = Field(None, description="on every verdict but pass")
    curations: list[CurationOut] = Field(
        [], description="the curations in force of the compared series: expected change points "
        "(the history spread starts there) and mutes (shown, never deciding)")


class RunBrief(BaseModel):
    id: int
    commit: str | None
    branch: str | None
    label: str | None
    started_at: str | None
    hardware: dict[str, Any]
    config: dict[str, Any]
    determinism: dict[str, Any] | None


class RunSamples(BaseModel):
    run_id: int
    samples: list[float]


class Distribution(BaseModel):
    metric: str
    series: dict[str, Any]
    baseline: list[RunSamples]
    candidate: list[RunSamples]


class TraceBrief(BaseModel):
    id: int
    filename: str
    sha256: str


class CompareOut(GateOut):
    """The gate's answer with what a reviewer wants beside it (dashboard and PR comment)."""

    distributions: list[Distribution]
    trace_diff: dict[str, Any] | None
    traces: dict[int, list[TraceBrief]]
    baseline_runs: list[RunBrief]
    candidate_runs: list[RunBrief]
    noise: list[NoiseCardOut] = Field([], description="the noise card of each judged series and "
                                      "gating metric (its default-branch history)")
