"""Run records in (POST /runs) and out (GET /runs)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from collectors.options import QUESTION_MAX

from ..schemas.common import (
    FIXED_SERIES_KEYS,
    METRIC_NAME,
    NAME_MAX,
    ConfigValue,
    Name,
    OptName,
    Sample,
)


class MetricIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unit: Annotated[str, Field(max_length=32)] = ""
    direction: Literal["higher", "lower"] | None = None
    samples: Annotated[list[Sample], Field(min_length=1, max_length=100_000)]


class ExperimentTag(BaseModel):
    """Marks a run as one arm of an interleaved A/B experiment (spec/api.md)."""

    model_config = ConfigDict(extra="forbid")
    id: Name
    arm: Literal["baseline", "candidate"]
    block: Annotated[StrictInt, Field(ge=0, le=100_000)]
    # the looks it was planned with (spec/api.md, One experiment one answer): max_pairs - pairs + 1
    # for --until-decided
    looks: Annotated[StrictInt, Field(ge=1, le=1000)] | None = None
    # the question the runner asked of it (--metric, --threshold, --vary), part of its plan:
    # every later asker that names none gets the answer to this one
    metrics: Annotated[list[Annotated[str, Field(min_length=1, max_length=NAME_MAX)]],
                       Field(min_length=1, max_length=QUESTION_MAX)] | None = None
    thresholds: Annotated[dict[Annotated[str, Field(min_length=1, max_length=NAME_MAX)],
                               Annotated[float, Field(ge=0, le=1000, allow_inf_nan=False)]],
                          Field(min_length=1, max_length=QUESTION_MAX)] | None = None
    vary: Annotated[list[Annotated[str, Field(min_length=1, max_length=NAME_MAX)]],
                    Field(min_length=1, max_length=QUESTION_MAX)] | None = None

    @field_validator("metrics", "vary")
    @classmethod
    def _once(cls, v: list[str] | None, info: ValidationInfo) -> list[str] | None:
        fixed = [k for k in v or [] if k in FIXED_SERIES_KEYS and info.field_name == "vary"]
        if fixed:
            raise ValueError(f"{fixed[0]!r} can never be varied: series never mix GPU models or "
                             "counts")
        return list(dict.fromkeys(v)) if v is not None else None

    def question(self) -> dict[str, Any] | None:
        """The metrics, thresholds and vary this record's experiment was asked with (each name
        once), or None where it names none."""
        q = {k: v for k, v in (("metrics", self.metrics), ("thresholds", self.thresholds),
                               ("vary", self.vary)) if v}
        return q or None


class BisectTag(BaseModel):
    """Marks a run as posted during `perfwarden bisect`: it never enters history (spec/api.md,
    bisect)."""

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
    # on disk only: the sizes and phases of the traces `trace_files` holds, in order
    trace_groups: Annotated[list[dict[str, Any]], Field(max_length=64)] | None = None

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


class StagedTraceRef(BaseModel):
    """A trace file uploaded to `POST /api/v1/traces/stage`, named by its content hash."""

    model_config = ConfigDict(extra="forbid")
    filename: Annotated[str, Field(min_length=1, max_length=200)]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    # the trace of the run it belongs to: 0 the run's own (its summary is the run's), another
    # number another phase or capture, summarized on its own; `phase` e.g. decode, prefill
    group: Annotated[int, Field(ge=0, le=63)] = 0
    phase: Annotated[str | None, Field(max_length=16, pattern=r"^[a-z_]*$")] = None


class RunBatchIn(BaseModel):
    """`POST /api/v1/runs/batch`: all or nothing, in one transaction. `traces`, one list per
    run (in order), attaches staged trace files to the runs in the same transaction."""

    model_config = ConfigDict(extra="forbid")
    runs: Annotated[list[RunIn], Field(min_length=1, max_length=10_000)]
    traces: list[Annotated[list[StagedTraceRef], Field(max_length=1024)]] | None = None

    @model_validator(mode="after")
    def _one_trace_list_per_run(self) -> RunBatchIn:
        if self.traces is not None and len(self.traces) != len(self.runs):
            raise ValueError(f"traces needs one list per run ({len(self.runs)}), "
                             f"not {len(self.traces)}")
        return self


class RunBatchCreated(BaseModel):
    ids: list[int]


class RunDeleted(BaseModel):
    """`DELETE /api/v1/runs/{id}`: the run is gone, with the trace files no other run shares and
    the baselines that held it (`force`)."""

    id: int
    deleted: bool
    trace_files_removed: int
    left_baselines: list[str]


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
    trace_group: int = 0  # 0: the run's own trace; others: another phase or capture
    phase: str | None = None
    group_summary: dict[str, Any] | None = None  # another group's set summary, once complete


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
