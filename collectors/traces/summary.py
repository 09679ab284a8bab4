"""The trace summary: what `perfwarden analyze --json` prints and a run record's
`trace_summary` holds (spec/metrics.md). Defined once; producers and readers use this type."""
from __future__ import annotations

from typing import Any, TypedDict


class StreamRef(TypedDict):
    device: int
    stream: int


class _Optional(TypedDict, total=False):
    ordering: dict[str, Any]  # the ordering check, when asked for


class TraceSummary(_Optional):
    source: str
    producer: str
    step_regex: str
    # "--step-regex", "auto: sglang", ... (spec/metrics.md, Steps in real engines' traces)
    step_source: str
    min_gap_us: float
    steps: int  # decode steps where the step names tell decode from prefill
    prefill_steps: int | None  # the family's other steps; None where names cannot tell
    graph_replay_ops: int  # ops in steps launched by CUDA graph replays
    # the auxiliary lane (spec/metrics.md, "From a trace"); None when the trace has no aux work
    aux_gap_count: int | None
    aux_gap_mean_us: float | None
    aux_gap_median_us: float | None
    aux_gap_p95_us: float | None
    aux_bubble_count: int | None
    aux_idle_per_step_us: float | None
    aux_busy_per_step_us: float | None
    aux_main_overlap_us_per_step: float | None
    step_gpu_time_us_mean: float | None
    step_gpu_time_us_median: float | None
    step_gpu_time_us_p95: float | None
    main_streams: list[StreamRef]
    aux_streams: list[StreamRef]
    ranks: list[dict[str, Any]]  # the same figures per rank, named by rank
    host_ops: list[dict[str, Any]]  # a CPU trace: its operators in the steps, standing in for kernels
    streams: list[dict[str, Any]]
    kernels: list[dict[str, Any]]
    ops: int
    warnings: list[str]
