"""Interval logic: property tests against plain loops, and small cases by hand."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.traces import analyze_files
from collectors.traces import intervals as iv
from tests.collectors.reference import inter, merge

ivs = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1000), st.integers(0, 60)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(ivs)
def test_merge_and_gaps_match_loops(rows):
    g = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows], dtype=np.int64)
    e = s + np.array([r[2] for r in rows], dtype=np.int64)
    mg, ms, me = iv.merge(g, s, e)
    gg, gaps = iv.gaps(mg, ms, me)
    for grp in range(4):
        want = merge([(a, b) for x, a, b in zip(g, s, e) if x == grp])
        got = [[a, b] for x, a, b in zip(mg, ms, me) if x == grp]
        assert got == want
        assert sorted(gaps[gg == grp].tolist()) == sorted(
            want[k + 1][0] - want[k][1] for k in range(len(want) - 1))


wide = st.lists(st.tuples(st.integers(0, 3), st.integers(-10**12, 10**12), st.integers(0, 10**9)),
                max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.tuples(ivs, ivs), st.tuples(wide, wide)))
def test_intersection_matches_loops(ab):
    """Both ways of computing it (the binary search, taken wherever its key fits, and the
    sweep) give the plain loop's lengths, over the same groups: every group of A or B."""
    def merged(rows):
        g = np.array([r[0] for r in rows], dtype=np.int64)
        s = np.array([r[1] for r in rows], dtype=np.int64)
        return iv.merge(g, s, s + np.array([r[2] for r in rows], dtype=np.int64))

    A, B = merged(ab[0]), merged(ab[1])
    if not len(A[0]) or not len(B[0]):
        return
    searched = iv._intersection_by_search(*A, *B)
    assert searched is not None
    for groups, length in (searched, iv._intersection_by_sweep(*A, *B),
                           iv.intersection_length(*A, *B)):
        assert groups.tolist() == sorted(set(A[0].tolist()) | set(B[0].tolist()))
        got = dict(zip(groups.tolist(), length.tolist()))
        for grp in range(4):
            la = [(s, e) for g, s, e in zip(*A) if g == grp]
            lb = [(s, e) for g, s, e in zip(*B) if g == grp]
            assert got.get(grp, 0) == inter(la, lb)


@pytest.mark.parametrize("A,B,want", [
    (([0], [0], [(1 << 62) + 5]), ([0, 0], [-(1 << 62), (1 << 62) - 100],
                                   [-(1 << 62) + 10, (1 << 62) + 10]), 105),
    (([0], [-(1 << 62)], [(1 << 62) + 5]), ([0], [-(1 << 62)], [-(1 << 62) + 10]), 10),
])
def test_intersection_of_times_whose_differences_would_wrap_is_swept(A, B, want):
    A, B = (tuple(np.array(c, dtype=np.int64) for c in x) for x in (A, B))
    assert iv._intersection_by_search(*A, *B) is None
    assert iv.intersection_length(*A, *B)[1].tolist() == [want]


def test_intersection_whose_key_would_not_fit_is_swept():
    starts = np.array([0, 1 << 61, 0], dtype=np.int64)  # a group spanning 2**61 ns, and another
    g = np.array([0, 0, 1])
    A = (g, starts, starts + 10)
    B = (g, starts + 5, starts + 20)
    assert iv._intersection_by_search(*A, *B) is None
    groups, length = iv.intersection_length(*A, *B)
    assert groups.tolist() == [0, 1] and length.tolist() == [10, 5]


def test_touching_intervals_merge():
    g = np.zeros(3, np.int64)
    mg, ms, me = iv.merge(g, np.array([0, 10, 30]), np.array([10, 20, 40]))
    assert ms.tolist() == [0, 30] and me.tolist() == [20, 40]


def _trace(path, events):
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_hand_made_trace(tmp_path):
    """One step, main stream 7, aux stream 9; aux ops at [0,5] [20,25] [26,30] (us) give one idle
    gap of 15 us and one bubble of 1 us; overlap with main [0,22] is 5 + 2 = 7 us."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "decode_step_0", "pid": 1, "tid": 1,
           "ts": 0, "dur": 100}]
    kernels = [(7, 0, 22), (9, 0, 5), (9, 20, 5), (9, 26, 4)]
    for i, (stream, ts, dur) in enumerate(kernels):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": 1 + i, "dur": 0.5, "args": {"correlation": 100 + i}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": stream,
                   "ts": ts, "dur": dur, "args": {"device": 0, "stream": stream,
                                                  "correlation": 100 + i}})
    s = analyze_files([_trace(tmp_path / "t.json", ev)])
    assert s["steps"] == 1
    assert s["aux_gap_count"] == 1 and s["aux_gap_mean_us"] == 15.0
    assert s["aux_gap_median_us"] == 15.0 and s["aux_gap_p95_us"] == 15.0
    assert s["aux_bubble_count"] == 1
    assert s["aux_idle_per_step_us"] == 16.0
    assert s["aux_busy_per_step_us"] == 14.0
    assert s["aux_main_overlap_us_per_step"] == 7.0
    assert s["step_gpu_time_us_mean"] == 30.0
    # a launch call outside the step range is not projected: the main-stream kernel leaves the
    # step, stream 9 becomes the busiest (main) stream, and there is no auxiliary stream left
    ev[1]["ts"] = 150
    s2 = analyze_files([_trace(tmp_path / "t2.json", ev)])
    assert s2["main_streams"] == [{"device": 0, "stream": 9}]
    assert s2["aux_streams"] == [] and s2["aux_gap_count"] is None


def test_old_pytorch_category_names(tmp_path):
    """Older PyTorch writes Kernel / Runtime / Operator."""
    ev = [{"ph": "X", "cat": "Operator", "name": "decode_step_3", "pid": 1, "tid": 1, "ts": 0,
           "dur": 50},
          {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1,
           "dur": 1, "args": {"correlation": 5}},
          {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 3,
           "args": {"device": 0, "stream": 7, "correlation": 5}}]
    s = analyze_files([_trace(tmp_path / "old.json", ev)])
    assert s["steps"] == 1 and s["kernels"][0]["count"] == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 2**40), st.integers(-1, 5)),
                min_size=1, max_size=60))
def test_group_rows_is_numpys_unique_rows(rows):
    """The analysis groups ops by (name, device, stream, kind) with group_rows: the same groups,
    in the same order, as numpy's row-wise unique."""
    a = np.array(rows, dtype=np.int64)
    want_rows, want_inv = np.unique(a, axis=0, return_inverse=True)
    got_rows, got_inv = iv.group_rows(a[:, 0], a[:, 1], a[:, 2])
    assert np.array_equal(got_rows, want_rows)
    assert np.array_equal(got_inv, want_inv.ravel())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(-2**62, 2**62), min_size=24, max_size=24), min_size=30,
                max_size=80))
def test_group_rows_of_many_wide_columns_is_numpys_unique_rows(rows):
    """24 columns of up to 80 distinct values each: their joined key would overflow int64, so
    it is ranked down on the way; the groups and their order are still numpy's."""
    a = np.array(rows, dtype=np.int64)
    a[:, ::2] %= 5  # half the columns narrow (ranked through a table), half wide (sorted)
    want_rows, want_inv = np.unique(a, axis=0, return_inverse=True)
    got_rows, got_inv = iv.group_rows(*(a[:, k] for k in range(a.shape[1])))
    assert np.array_equal(got_rows, want_rows)
    assert np.array_equal(got_inv, want_inv.ravel())


@pytest.mark.parametrize("devices", [(0, -1), (-1, -1), (5, 3)])
def test_rank_rows_whatever_the_device_numbers(devices):
    """Two processes of one step each, on the given device numbers (-1: a trace that names no
    device): each process's row holds what it gives alone. Steps and devices group as
    (step, device) keys that decode back to their step for any device numbers."""
    from collectors.traces.analysis import Options, analyze
    from collectors.traces.model import Calls, Ops, Ranges, Trace

    def trace(procs: list[tuple[int, int]]) -> Trace:
        rows, calls = [], []
        for p, d in procs:
            for k in range(5):  # times in ns: aux gaps of about 70 us
                for stream, off, dur in ((7, 0, 90_000), (8, 10_000 * p, 20_000 + 3_000 * p)):
                    corr, t0 = len(rows), 100_000 * k + off
                    rows.append((t0, t0 + dur, d, stream, corr, p))
                    calls.append((t0 - 5_000, t0 - 4_000, 10 * p, corr, p))
        o, c = np.array(rows, dtype=np.int64), np.array(calls, dtype=np.int64)
        n = len(rows)
        return Trace(ops=Ops(*(o[:, i] for i in range(6)), np.zeros(n, np.int32),
                             np.zeros(n, np.int8)),
                     calls=Calls(*(c[:, i] for i in range(5))),
                     ranges=Ranges(np.full(len(procs), -100_000), np.full(len(procs), 1_000_000),
                                   np.array([10 * p for p, _ in procs]),
                                   np.array([p for p, _ in procs]), ["decode_step"] * len(procs)),
                     names=["k"], device_labels={d: f"GPU {d}" for _, d in procs})

    procs = list(zip((1, 2), devices))
    whole = analyze(trace(procs), Options(step_regex="decode_step"))
    keys = ("aux_gap_count", "aux_gap_mean_us", "aux_idle_per_step_us", "aux_busy_per_step_us",
            "aux_main_overlap_us_per_step", "step_gpu_time_us_mean")
    for row, p in zip(whole["ranks"], procs):
        alone = analyze(trace([p]), Options(step_regex="decode_step"))
        assert {k: row[k] for k in keys} == {k: alone[k] for k in keys}
        assert alone["aux_gap_count"] == 4
    assert whole["aux_gap_count"] == 8


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint64"]),
       st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40))
def test_unique_inverse_is_numpys_unique_in_any_integer_dtype(dtype, raw):
    info = np.iinfo(dtype)
    a = np.array([info.min + v % (int(info.max) - int(info.min) + 1) for v in raw], dtype=dtype)
    want_u, want_inv = np.unique(a, return_inverse=True)
    got_u, got_inv = iv.unique_inverse(a)
    assert got_u.dtype == a.dtype and np.array_equal(got_u, want_u)
    assert np.array_equal(got_inv, want_inv.ravel())
