"""What an analysis is asked (Options: the step family, the gap threshold, the streams named by
hand) and the steps it projects ops onto (Projection): the types analysis.py, steps.py, roles.py
and lanes.py share, so none of them imports another for its types."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

KERNEL_LIMIT = 200  # kernel rows a summary keeps, largest total first


@dataclass
class Options:
    step_regex: str | None = None  # None: the first step family found (steps.py)
    step_source: str = ""  # how step_regex was chosen; set by steps.resolve
    prefill_regex: str | None = None  # the family's prefill ranges, where names tell them apart
    min_gap_us: float = 10.0
    main_streams: list[tuple[int, int]] = field(default_factory=list)  # (device, stream)
    aux_streams: list[tuple[int, int]] = field(default_factory=list)
    kernel_limit: int = KERNEL_LIMIT


@dataclass
class Projection:
    """Which step each op belongs to (-1: none), and the step ranges that kept ops."""

    op_step: np.ndarray  # per op: index into step arrays, or -1
    step_start_ns: np.ndarray
    step_end_ns: np.ndarray
    step_proc: np.ndarray
    step_names: list[str]
    op_call_start_ns: np.ndarray  # per op: its launch call's start, -1 when none
    op_call_thread: np.ndarray  # per op: its launch call's thread key, -1 when none
