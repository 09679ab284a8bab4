"""Kineto traces from older PyTorch write absolute epoch microseconds (about 1.8e15), which a
float64 nanosecond value cannot hold: times stay exact (spec/metrics.md). The test trace is the
real H200 capture kineto_1layer_M4 with every `ts` rewritten, digit for digit, as the absolute
epoch microseconds older PyTorch would write (baseTimeNanoseconds added, then dropped)."""
from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from collectors.traces import Options, analyze, load_trace
from collectors.traces.kineto import exact_ns
from tests.conftest import DATA

KEYS = ("steps", "aux_gap_count", "aux_bubble_count", "aux_gap_mean_us", "aux_gap_median_us",
        "aux_gap_p95_us", "aux_idle_per_step_us", "aux_busy_per_step_us",
        "aux_main_overlap_us_per_step", "step_gpu_time_us_mean", "step_gpu_time_us_p95")


def test_epoch_microseconds_give_the_same_figures():
    rel = load_trace(DATA / "kineto_1layer_M4.json.gz")
    old = load_trace(DATA / "kineto_1layer_M4_epoch_us.json.gz")
    base_ns = 1790857026000000000  # the capture's baseTimeNanoseconds
    # every op lands on the same nanosecond, shifted by the base
    assert np.array_equal(old.ops.start_ns - base_ns, rel.ops.start_ns)
    assert np.array_equal(old.ops.end_ns - old.ops.start_ns, rel.ops.end_ns - rel.ops.start_ns)
    a, b = analyze(rel, Options()), analyze(old, Options())
    assert a["steps"] == 10 and a["aux_gap_mean_us"] == pytest.approx(57.768)
    for k in KEYS:
        assert b[k] == pytest.approx(a[k], rel=0, abs=1e-9), k


def test_float64_would_have_drifted():
    """The check above can fail: read through float64 the same timestamps move by up to
    128 ns."""
    text = gzip.open(DATA / "kineto_1layer_M4_epoch_us.json.gz", "rt").read()
    stamps = re.findall(r'"ts": ([0-9.]+)', text)[:2000]
    exact = np.array([exact_ns(s.encode()) for s in stamps], dtype=np.int64)
    lossy = np.rint(np.array([float(s) for s in stamps]) * 1000).astype(np.int64)
    assert np.abs(lossy - exact).max() >= 50
    assert exact_ns(b"1795977151984728.857") == 1795977151984728857
    assert exact_ns(b'"12.5"') == 12500 and exact_ns("7") == 7000 and exact_ns(b"1e3") == 1_000_000
