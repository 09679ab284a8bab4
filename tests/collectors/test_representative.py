"""Representativeness warnings (spec/metrics.md, Representativeness warnings) on real H200 traces: a
profile
that cannot show what the timed trials ran says so."""
from __future__ import annotations

from collectors.traces import analyze_files
from collectors.traces.representative import warnings_for
from tests.conftest import H200

TR = H200 / "traces"
TORCH_TP2 = sorted((H200 / "resident" / "torch" / "traces").glob("*.json.gz"))


def test_eager_profile_of_a_graph_run():
    eager = analyze_files([TR / "tp1-overlap-eager-nsys_M1.sqlite.gz"])
    graphs = analyze_files([TR / "tp1-overlap-graphs-nsys_M1.sqlite.gz"])
    cfg = {"cuda_graphs": True, "shared_experts": "overlap", "tp": 1}
    assert eager["graph_replay_ops"] == 0 and graphs["graph_replay_ops"] > 0
    assert any("no graph replays" in w for w in warnings_for(eager, cfg))
    assert warnings_for(graphs, cfg) == []
    assert warnings_for(eager, {**cfg, "cuda_graphs": False}) == []
    assert any("no graph replays" in w for w in warnings_for(eager, {"enforce_eager": "False"}))


def test_no_aux_lane_where_the_shared_experts_overlap():
    serial = analyze_files([TR / "tp1-serial-eager-nsys_M1.sqlite.gz"])
    assert serial["aux_streams"] == []
    ws = warnings_for(serial, {"shared_experts": "overlap"})
    assert len(ws) == 1 and "no auxiliary stream" in ws[0]
    assert warnings_for(serial, {"shared_experts": "serial"}) == []


def test_a_rank_missing_from_the_trace_set():
    assert len(TORCH_TP2) == 2
    one = analyze_files(TORCH_TP2[:1])
    both = analyze_files(TORCH_TP2)
    ws = warnings_for(one, {"tp": 2})
    assert len(ws) == 1 and "2 ranks" in ws[0] and "holds 1" in ws[0]
    assert warnings_for(both, {"tp": 2}) == []
    assert any("8 ranks" in w for w in warnings_for(both, {"tp": 8}))


def test_a_hole_in_the_rank_numbers(tmp_path):
    import shutil

    shutil.copy(TORCH_TP2[0], tmp_path / "trace_M1_rank0.json.gz")
    shutil.copy(TORCH_TP2[1], tmp_path / "trace_M1_rank2.json.gz")
    s = analyze_files(sorted(tmp_path.glob("*.json.gz")))
    assert [r["rank"] for r in s["ranks"]] == [0, 2]
    assert warnings_for(s, {}) == ["the trace set lacks rank(s) 1 (its files are ranks 0, 2)"]
