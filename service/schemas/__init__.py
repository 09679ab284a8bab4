"""API input and output schemas (pydantic). Separate from ORM models and analysis data."""
from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from ..errors import Invalid

NAME_MAX = 200
FIXED_SERIES_KEYS = ("gpu", "gpu_count")  # part of every series' identity; never varied
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
OptName = Annotated[str | None, Field(default=None, max_length=NAME_MAX)]
METRIC_NAME = re.compile(r"^[A-Za-z0-9_.:/\-]+$")
ConfigValue = Union[StrictBool, StrictInt, StrictFloat, Annotated[str, Field(max_length=NAME_MAX)], None]


def _finite(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("must be a number")
    if not math.isfinite(v):
        raise ValueError("must be a finite number")
    return float(v)


Sample = Annotated[float, BeforeValidator(_finite)]
RunId = Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]


class MetricIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unit: Annotated[str, Field(max_length=32)] = ""
    direction: Literal["higher", "lower"] | None = None
    samples: Annotated[list[Sample], Field(min_length=1, max_length=100_000)]


class ExperimentTag(BaseModel):
    """Marks a run as one arm of an interleaved A/B experiment (spec/api.md v1.1)."""

    model_config = ConfigDict(extra="forbid")
    id: Name
    arm: Literal["baseline", "candidate"]
    block: Annotated[StrictInt, Field(ge=0, le=100_000)]
    # the looks it was planned with (v1.2 item 4): max_pairs - pairs + 1 for --until-decided
    looks: Annotated[StrictInt, Field(ge=1, le=1000)] | None = None


class BisectTag(BaseModel):
    """Marks a run as posted during `perfwarden bisect`: it never enters history (v1.2 item 8)."""

    model_config = ConfigDict(extra="forbid")
    id: Name
    commit: OptName = None


# fields kept with the run as written (run.extra), beside the columns
RUN_EXTRAS = ("trials", "kv_cache", "plant", "source", "profile_error", "experiment", "routed_kernel",
              "meta")


class RunIn(BaseModel):
    """A run record. Unknown top-level fields are bad input, so a typo is never dropped."""

    model_config = ConfigDict(extra="forbid")
    benchmark: Name
    config: dict[Annotated[str, Field(max_length=NAME_MAX)], ConfigValue] = Field(default_factory=dict)
    commit: OptName = None
    branch: OptName = None
    label: OptName = None
    repository: OptName = None
    pr: Annotated[int | None, Field(default=None, ge=1, le=2**31 - 1)] = None
    hardware: dict[str, Any] = Field(default_factory=dict)
    environment: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime | None = None
    metrics: Annotated[dict[str, MetricIn], Field(min_length=1, max_length=1000)]
    determinism: dict[str, Any] | None = None
    trace_summary: dict[str, Any] | None = None
    idempotency_key: OptName = None
    experiment: ExperimentTag | None = None
    bisect: BisectTag | None = None
    # what an engine output says beyond the workload's identity (backend, num_prompts, ...)
    meta: dict[str, Any] | None = None
    trials: Annotated[list[dict[str, Any]], Field(max_length=100_000)] | None = None
    kv_cache: dict[str, Any] | None = None
    plant: dict[str, Any] | None = None
    source: dict[str, Any] | None = None  # which engine output a record was read from
    profile_error: Annotated[str, Field(max_length=4096)] | None = None
    routed_kernel: dict[str, Any] | None = None  # the resident kernel: grid, warps, shared memory
    # on disk only: paths of the run's trace set relative to the record file; never stored
    trace_files: Annotated[list[Annotated[str, Field(max_length=4096)]], Field(max_length=1024)] | None = None

    def extras(self) -> dict[str, Any]:
        return self.model_dump(mode="json", include=set(RUN_EXTRAS), exclude_none=True)

    @field_validator("benchmark")
    @classmethod
    def _bench(cls, v: str) -> str:
        v = v.strip()
        if not v or any(c in v for c in "\n\r\t/"):
            raise ValueError("must be a non-empty name without slashes or control characters")
        return v

    @field_validator("metrics")
    @classmethod
    def _names(cls, v: dict) -> dict:
        for name in v:
            if len(name) > NAME_MAX or not METRIC_NAME.match(name):
                raise ValueError(f"metric name {name[:50]!r} must be 1-200 characters of "
                                 "letters, digits and _.:/-")
        return v

    @field_validator("hardware")
    @classmethod
    def _hardware(cls, v: dict) -> dict:
        gpu = v.get("gpu")
        if gpu is not None and (not isinstance(gpu, str) or len(gpu) > NAME_MAX):
            raise ValueError("hardware.gpu must be a string of at most 200 characters")
        cnt = v.get("gpu_count")
        if cnt is not None and (isinstance(cnt, bool) or not isinstance(cnt, int) or cnt < 0):
            raise ValueError("hardware.gpu_count must be a non-negative integer")
        return v

    @field_validator("started_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        if v is None:
            return v
        if v.tzinfo is None:
            return v.replace(tzinfo=timezone.utc)
        return v.astimezone(timezone.utc)

    @model_validator(mode="after")
    def _determinism(self) -> RunIn:
        d = self.determinism
        if d is not None:
            rep, ide = d.get("repeats"), d.get("identical")
            if not isinstance(rep, int) or not isinstance(ide, int) or isinstance(rep, bool) \
                    or rep < 0 or not 0 <= ide <= rep:
                raise ValueError("determinism needs integers repeats >= identical >= 0")
        return self


class RunCreated(BaseModel):
    id: int


class RunBatchIn(BaseModel):
    """`POST /api/v1/runs/batch`: all or nothing, in one transaction."""

    model_config = ConfigDict(extra="forbid")
    runs: Annotated[list[RunIn], Field(min_length=1, max_length=10_000)]


class RunBatchCreated(BaseModel):
    ids: list[int]


class MetricOut(BaseModel):
    unit: str
    direction: str
    n: int
    mean: float
    median: float
    stdev: float | None
    samples: list[float] | None = None


# a trace's analysis (a durable job): pending until a worker analyzed it, then done or failed
TraceState = Literal["pending", "done", "failed"]


class TraceRef(BaseModel):
    id: int
    filename: str
    sha256: str
    size_bytes: int
    format: str
    state: TraceState = "done"
    error: str | None = None  # why the analysis failed


class RunOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: int
    benchmark: str
    config: dict[str, Any]
    commit: str | None
    branch: str | None
    label: str | None
    repository: str | None
    pr: int | None
    hardware: dict[str, Any]
    environment: dict[str, Any]
    started_at: str
    created_at: str
    series_id: int
    metrics: dict[str, MetricOut]
    determinism: dict[str, Any] | None = None
    trace_summary: dict[str, Any] | None = None
    traces: list[TraceRef] = []


class RunList(BaseModel):
    data: list[RunOut]
    count: int


class BaselineIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    benchmark: Name
    run_ids: Annotated[list[RunId], Field(min_length=1, max_length=10_000)]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        v = v.strip()
        if not v or any(c in v for c in "/\n\r\t"):
            raise ValueError("must be a non-empty name without slashes or control characters")
        return v


class BaselineMove(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_ids: Annotated[list[RunId], Field(min_length=1, max_length=10_000)]


class BaselineOut(BaseModel):
    id: int
    name: str
    benchmark: str
    run_ids: list[int]
    created_at: str
    updated_at: str
    history: list[dict[str, Any]] = []


class BaselineList(BaseModel):
    data: list[BaselineOut]
    count: int


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
                                    "baseline, history or blocks")
    spread_runs: int | None = None


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


class NoiseOut(BaseModel):
    benchmark: str
    metric: str
    branch: str | None
    baseline: str | None
    series: list[NoiseRow]


class BenchmarkSummary(BaseModel):
    name: str
    runs: int
    latest: str | None
    default_branch: str
    bisect_command: str | None = None


class BenchmarkList(BaseModel):
    data: list[BenchmarkSummary]
    count: int


class BenchmarkPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default_branch: Name | None = None
    # the CMD of the alert's `perfwarden bisect ... -- CMD` line; "" clears it
    bisect_command: Annotated[str, Field(max_length=4096)] | None = None

    @model_validator(mode="after")
    def _something(self) -> BenchmarkPatch:
        if self.default_branch is None and self.bisect_command is None:
            raise ValueError("give default_branch or bisect_command")
        return self


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


class FactorOut(BaseModel):
    key: str
    levels: list[Any]
    effect: float
    p_value: float | None
    explains: float = Field(description="share of the outcome's variation, 0..1")
    level_values: dict[str, float]


class AttributionOut(BaseModel):
    benchmark: str
    metric: str
    runs: int
    factors: list[FactorOut]
    finding: str
    spread_factors: list[FactorOut] | None = None
    spread_finding: str | None = None


class TraceOut(BaseModel):
    id: int
    run_id: int
    sha256: str
    filename: str
    size_bytes: int
    format: str
    summary: dict[str, Any] | None  # None until the analysis job is done
    set_files: int = 1  # trace files the run holds now
    state: TraceState = "done"
    error: str | None = None  # why the analysis failed


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str
    field: str | None = None


class ErrorOut(BaseModel):
    error: ErrorBody


def parse_run_ids(text: str) -> list[int]:
    """`run_ids=1,2,3` of the compare view (API and dashboard)."""
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise Invalid("run_ids: expected comma-separated run ids", "run_ids") from None
    if not ids or len(ids) > 1000 or any(i < 1 or i > 2**31 - 1 for i in ids):
        raise Invalid("run_ids: expected 1 to 1000 run ids", "run_ids")
    return ids


def parse_vary(text: str | None) -> list[str] | None:
    """`vary=a,b` of the compare view (and `metrics=a,b`)."""
    return [k.strip() for k in text.split(",") if k.strip()] if text else None


def parse_thresholds(text: str | None) -> dict[str, float] | None:
    """`thresholds=tok_s=2,kv_capacity_tokens=0` of the compare view: the gate's thresholds."""
    if not text:
        return None
    out = {}
    for item in text.split(","):
        name, _, val = item.strip().partition("=")
        try:
            out[name.strip()] = float(val)
        except ValueError:
            raise Invalid(f"thresholds: {item.strip()!r} is not METRIC=PERCENT",
                          "thresholds") from None
    return out


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
