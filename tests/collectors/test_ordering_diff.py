"""The ordering check and the trace diff on real traces."""
from __future__ import annotations

import pytest

from collectors.traces import Options
from collectors.traces.analysis import analyze, project, stream_roles
from collectors.traces.diff import diff_summaries
from collectors.traces.load import load_trace
from collectors.traces.ordering import check_ordering
from tests.conftest import DATA


def test_ordering_reports_overlap_and_wait_edges():
    path = DATA / "nsys_two_streams.sqlite"
    t = load_trace(path)
    opts = Options(step_regex="step")
    proj = project(t, opts.step_regex)
    res = check_ordering(t, "gemm", opts, proj, stream_roles(t, proj, opts))
    assert res["guarded_kernels"] == 20
    assert res["sync_records"] is True
    # the side-stream GEMM runs beside the main one in this capture
    assert res["violations"] > 0
    assert all(v["overlap_us"] > 0 for v in res["violation_list"])


def test_ordering_without_sync_records_says_so():
    t = load_trace(DATA / "kineto_1layer_M4.json.gz", "decode_step")
    res = check_ordering(t, "nvjet")
    assert res["sync_records"] is False and res["unordered"] is None
    assert res["violations"] == 9


def test_diff_names_slower_kernels():
    base = analyze(load_trace(DATA / "kineto_1layer_M4.json.gz", "decode_step"))
    cand = analyze(load_trace(DATA / "kineto_1layer_M8.json.gz", "decode_step"))
    d = diff_summaries(base, cand)
    gap = next(g for g in d["gaps"] if g["metric"] == "aux_gap_mean_us")
    assert gap["base"] == pytest.approx(57.768) and gap["delta"] > 0
    assert d["kernels"][0]["delta_per_step_us"] > 0  # M=8 index kernels are the biggest change
    assert d["kernels"][0]["name"].startswith("void at::native::index_elementwise_kernel")
