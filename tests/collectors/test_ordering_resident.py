"""The ordering check by NVTX phase on the committed H200 captures of TP2 with the resident-grid
routed-expert kernel (data/h200/resident): `late` is flagged and `overlap` passes, eager and with
CUDA graphs, whether the graph replays are matched through the capture's own eager reference
steps or through a separate eager trace."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.traces import Options
from collectors.traces.analysis import project, stream_roles
from collectors.traces.load import load_trace, load_traces
from collectors.traces.ordering import check_ordering
from collectors.traces.pipeline import analyze_files

ROOT = Path(__file__).resolve().parents[2]
NSYS = ROOT / "data" / "h200" / "resident" / "nsys" / "traces"
KEEP = "(?:decode_step)|(?:routed_experts)|(?:eager_reference_step)"


def _check(name: str, reference: str | None = None, **kw) -> dict:
    t = load_trace(NSYS / f"{name}.sqlite", KEEP)
    opts = Options()
    proj = project(t, opts.step_regex)
    ref = load_trace(NSYS / f"{reference}.sqlite", KEEP) if reference else None
    return check_ordering(t, kw.pop("kernels", None), opts, proj, stream_roles(t, proj, opts),
                          guard_range=kw.pop("guard_range", "routed_experts"), reference=ref)


@pytest.mark.parametrize("mode", ["eager", "graphs"])
def test_overlap_passes(mode):
    res = _check(f"overlap-{mode}")
    assert res["verdict"] == "ok"
    # 2 ranks x 10 steps x 4 layers x 4 ops launched in the routed_experts range
    assert res["guarded_kernels"] == 160
    assert res["violations"] == 0 and res["unordered"] == 0 and res["ordered_checked"] > 0
    assert res["graph_replay_kernels"] == (160 if mode == "graphs" else 0)


@pytest.mark.parametrize("mode", ["eager", "graphs"])
def test_late_is_flagged(mode):
    res = _check(f"late-{mode}")
    assert res["verdict"] == "hazard"
    assert res["guarded_kernels"] == 160
    assert res["violations"] > 0 and res["unordered"] > 0
    kernels = {v["kernel"] for v in res["violation_list"]}
    assert "resident_moe_kernel" in kernels
    worst = max(v["overlap_us"] for v in res["violation_list"] if v["kernel"] == "resident_moe_kernel")
    assert worst > 5.0


def test_graph_phase_comes_from_the_eager_reference_steps():
    res = _check("late-graphs")
    ref = res["reference"]
    assert ref["steps"] == 4  # 2 eager reference steps on each of 2 ranks
    assert "resident_moe_kernel" in ref["guarded_names"]
    assert all(v["graph_replay"] for v in res["violation_list"])


@pytest.mark.parametrize("order,verdict", [("overlap", "ok"), ("late", "hazard")])
def test_graph_replays_through_a_separate_eager_trace(order, verdict):
    res = _check(f"{order}-graphs", reference=f"{order}-eager")
    assert res["verdict"] == verdict
    assert res["reference"]["source"].endswith(f"{order}-eager.sqlite")
    assert res["reference"]["steps"] == 20


@pytest.mark.parametrize("order,verdict", [("overlap", "ok"), ("late", "hazard")])
def test_kernel_name_guard_under_graphs(order, verdict):
    res = _check(f"{order}-graphs", kernels="resident_moe", guard_range=None)
    assert res["verdict"] == verdict and res["guarded_kernels"] == 80


def test_cli_guard_range_prints_the_verdict():
    for order, word in (("overlap", "OK"), ("late", "HAZARD")):
        r = subprocess.run([sys.executable, "-m", "collectors", "analyze", "--quiet",
                            str(NSYS / f"{order}-graphs.sqlite"), "--guard-range", "routed_experts"],
                           capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        assert f"ordering check (range 'routed_experts'): {word}:" in r.stdout


def test_reference_needs_a_guard_range():
    r = subprocess.run([sys.executable, "-m", "collectors", "analyze", str(NSYS / "late-graphs.sqlite"),
                        "--reference", str(NSYS / "late-eager.sqlite")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 64 and "--reference is the eager trace for --guard-range" in r.stderr


def test_eight_rank_set_in_parallel_names_each_rank(tmp_path):
    """An 8-rank Kineto set (the real TP2 rank traces of data/h200/resident/torch, copied to
    ranks 0-7) loads in parallel processes and reports each rank under its file and rank number."""
    src = sorted((ROOT / "data" / "h200" / "resident" / "torch" / "traces").glob("*.json.gz"))
    files = []
    for r in range(8):
        f = tmp_path / f"trace_M1_rank{r}.json.gz"
        f.write_bytes(src[r % 2].read_bytes())
        files.append(f)
    serial = [t.ops.start_ns.size for t in load_traces(files, jobs=1)]
    parallel = load_traces(files, jobs=4)
    assert [t.ops.start_ns.size for t in parallel] == serial
    summary = analyze_files(files, jobs=4)
    assert [r["rank"] for r in summary["ranks"]] == list(range(8))
    assert [r["file"] for r in summary["ranks"]] == [f.name for f in files]
    one = analyze_files(files[:1])
    assert summary["ranks"][0]["aux_gap_mean_us"] == pytest.approx(one["aux_gap_mean_us"])
    assert summary["steps"] == 8 * one["steps"]
    out = subprocess.run([sys.executable, "-m", "collectors", "analyze", "--json", "--jobs", "2",
                          *map(str, files)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert [r["rank"] for r in json.loads(out.stdout)["ranks"]] == list(range(8))
    assert "loading 8 trace files in 2 processes" in out.stderr
