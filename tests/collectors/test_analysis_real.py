"""The analysis on real H200 traces agrees with an independent plain implementation of the spec."""
from __future__ import annotations

import gzip
import shutil

import pytest

from collectors.traces import Options, TraceError, analyze_files
from tests.collectors import reference
from tests.conftest import DATA, H200

KEYS = ("steps", "aux_gap_count", "aux_gap_mean_us", "aux_gap_median_us", "aux_gap_p95_us",
        "aux_bubble_count", "aux_idle_per_step_us", "aux_busy_per_step_us",
        "aux_main_overlap_us_per_step")


def _agree(ours: dict, ref: dict) -> None:
    for k, v in ref.items():
        if v is None:
            assert ours[k] is None, k
        else:
            assert ours[k] == pytest.approx(v, rel=1e-9, abs=1e-9), k


@pytest.mark.parametrize("name", ["kineto_1layer_M4.json.gz", "kineto_1layer_M8.json.gz"])
def test_kineto_matches_reference(name):
    ours = analyze_files([DATA / name])
    ref = reference.analyze(*reference.kineto_rows(DATA / name))
    assert ours["steps"] == 10
    assert ours["main_streams"] == [{"device": 0, "stream": 7}]
    assert ours["aux_streams"] == [{"device": 0, "stream": 13}]
    _agree(ours, ref)


def test_kineto_m4_known_figures():
    s = analyze_files([DATA / "kineto_1layer_M4.json.gz"])
    # figures of this capture, cross-checked with the reference implementation above
    assert s["aux_gap_count"] == 4
    assert s["aux_gap_mean_us"] == pytest.approx(57.768)
    assert s["aux_bubble_count"] == 35


def test_nsys_two_streams_matches_reference():
    path = DATA / "nsys_two_streams.sqlite"
    ours = analyze_files([path], Options(step_regex="step"))
    ref = reference.analyze(*reference.nsys_rows(path), regex="step")
    assert ours["steps"] == 20
    _agree(ours, ref)
    # one aux op per step: no gaps at all, but the lane exists
    assert ours["aux_gap_count"] == 0 and ours["aux_gap_mean_us"] is None
    assert ours["aux_bubble_count"] == 0


@pytest.mark.parametrize("name", ["tp1-overlap-eager-nsys_M1", "tp1-late-eager-nsys_M1",
                                  "tp1-overlap-graphs-nsys_M1", "tp2-overlap-eager-nsys_M1"])
def test_collector_nsys_captures_match_reference(name, tmp_path):
    plain = tmp_path / f"{name}.sqlite"
    with gzip.open(H200 / "traces" / f"{name}.sqlite.gz") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    ours = analyze_files([plain])
    ref = reference.analyze(*reference.nsys_rows(plain))
    _agree(ours, ref)


def test_graph_capture_spreads_aux_work_over_internal_streams(tmp_path):
    s = analyze_files([H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz"])
    assert s["steps"] == 10
    assert len(s["aux_streams"]) == 4  # one per layer's branch, as the H200 README says
    assert s["aux_gap_count"] == 30 and s["aux_bubble_count"] == 360


def test_tp2_ranks_listed():
    s = analyze_files([H200 / "traces" / "tp2-overlap-eager-nsys_M1.sqlite.gz"])
    assert s["steps"] == 20 and len(s["ranks"]) == 2
    assert sum(r["steps"] for r in s["ranks"]) == 20
    assert {m["device"] for m in s["main_streams"]} == {0, 1}


def test_serial_has_null_aux_keys():
    s = analyze_files([H200 / "traces" / "tp1-serial-eager-nsys_M1.sqlite.gz"])
    assert s["steps"] == 10
    for k in KEYS[1:]:
        assert s[k] is None


def test_two_files_are_two_ranks(tmp_path):
    one = analyze_files([DATA / "kineto_1layer_M4.json.gz"])
    two = analyze_files([DATA / "kineto_1layer_M4.json.gz", DATA / "kineto_1layer_M8.json.gz"])
    assert two["steps"] == 20 and len(two["ranks"]) == 2
    assert len(two["main_streams"]) == 2  # device 0 of each file is its own device
    assert two["aux_gap_count"] == 4 + 4
    assert two["ranks"][0]["aux_gap_mean_us"] == pytest.approx(one["aux_gap_mean_us"])


def test_no_matching_range_is_an_answer():
    s = analyze_files([DATA / "nsys_two_streams.sqlite"])  # ranges are named step<i>
    assert s["steps"] == 0 and s["aux_gap_mean_us"] is None
    assert any("step0" in w for w in s["warnings"])


def test_overrides_pick_streams():
    s = analyze_files([DATA / "kineto_1layer_M4.json.gz"], Options(main_streams=[(0, 13)]))
    assert s["main_streams"] == [{"device": 0, "stream": 13}]
    assert s["aux_streams"] == [{"device": 0, "stream": 7}]


@pytest.mark.parametrize("content,msg", [(b"", "empty file"), (b"\x1f\x8b\x08garbage", "gzip"),
                                         (b'{"traceEvents": [', "malformed JSON"),
                                         (b"SQLite format 3\x00" + b"\x00" * 100, "nsys"),
                                         (b"hello", "unknown trace format")])
def test_broken_traces_fail_with_one_line(tmp_path, content, msg):
    p = tmp_path / "t.json"
    p.write_bytes(content)
    with pytest.raises(TraceError) as e:
        analyze_files([p])
    assert msg in str(e.value) and "\n" not in str(e.value)
