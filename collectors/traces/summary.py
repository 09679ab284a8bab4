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


_NUMERIC = ("_us", "_share", "_pct", "count", "ops", "steps", "device", "stream", "rank")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool)) or _number(v)


def _row_ok(row: Any) -> bool:
    """A row of a list field (a kernel, a stream, a rank): a mapping of plain values, its name a
    string, its counts and times numbers."""
    if not isinstance(row, dict):
        return False
    for k, v in row.items():
        if not isinstance(k, str):
            return False
        if isinstance(v, list):
            if not all(_scalar(x) for x in v):
                return False
        elif isinstance(v, dict):
            if not all(isinstance(a, str) and _scalar(b) for a, b in v.items()):
                return False
        elif not _scalar(v) or (k == "name" and not isinstance(v, str)) or (
                k.endswith(_NUMERIC) and v is not None and not _number(v)):
            return False
    return True


_ORDERING_TEXT = ("verdict", "preset", "reason", "check")  # what a reader of the check shows


def _ordering_ok(v: dict) -> bool:
    return all(v.get(k) is None or isinstance(v[k], str) for k in _ORDERING_TEXT) and (
        v.get("guarded_kernels") is None or _number(v["guarded_kernels"]))


def _field_ok(hint: str, v: Any) -> bool:
    if hint.startswith("list"):
        return isinstance(v, list)
    if hint.startswith("dict"):
        return isinstance(v, dict) and _ordering_ok(v)
    if v is None:
        return "None" in hint
    if hint.startswith("str"):
        return isinstance(v, str)
    return _number(v)  # int, float, and their optional forms


def valid(stored: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """A stored summary as a reader may show it: the fields of their type (the rows of a list
    field that have their shape), and one line for each thing left out. A value that is not a
    mapping at all: None."""
    if stored is None:
        return None, []
    if not isinstance(stored, dict):
        return None, [f"the stored trace summary is a {type(stored).__name__}, not a mapping: "
                      "not shown"]
    hints = {**_Optional.__annotations__, **TraceSummary.__annotations__}
    out: dict[str, Any] = {}
    notes = []
    for k, v in stored.items():
        h = hints.get(k, "Any")
        hint = str(getattr(h, "__forward_arg__", h))  # the annotation's text
        if hint != "Any" and not _field_ok(hint, v):
            notes.append(f"{str(k)[:80]}: not of its type ({hint}), not shown")
            continue
        if isinstance(v, list) and hint.startswith("list[str]"):
            v = [x for x in v if isinstance(x, str)]
        elif isinstance(v, list) and hint.startswith("list"):
            rows = [x for x in v if _row_ok(x)]
            if len(rows) < len(v):
                notes.append(f"{k}: {len(v) - len(rows)} of {len(v)} rows malformed, not shown")
            v = rows
        out[str(k)] = v
    return out, notes
