"""The ordering check with no flags: the routed experts' NVTX ranges are guarded by default, graph
replays take their edges from the eager reference steps of the same trace, and an `unknown` says
the exact flag that would decide it."""
from __future__ import annotations

import gzip
import json

import pytest

from collectors.traces import analyze_files
from tests.conftest import H200

ENGINES = H200 / "engines"
RESIDENT = H200 / "resident" / "nsys" / "traces"
EXPECTED = {"joined": "ok", "unjoined": "hazard", "serial": "ok", "overlap": "ok", "late": "hazard"}
FILES = sorted(ENGINES.glob("*.gz")) + sorted(RESIDENT.glob("*.sqlite"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_flags_guard_the_routed_expert_ranges(path):
    o = analyze_files([path])["ordering"]
    order = path.name.split("-")[1] if path.parent == ENGINES else path.name.split("-")[0]
    assert o["verdict"] == EXPECTED[order], o["reason"]
    assert o["default_guard"] == "routed-expert ranges" and o["guarded_kernels"] > 0


def _rewritten(src, dst, edit):
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["traceEvents"] = [e for e in (edit(e) for e in doc["traceEvents"]) if e is not None]
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dst


def test_kernels_the_preset_does_not_know_are_still_guarded_by_their_range(tmp_path):
    """An engine whose routed-expert kernels carry names no preset knows: the range decides."""
    def rename(e):
        if e.get("cat") == "kernel" and ("fused_moe" in e["name"] or "moe_align" in e["name"]):
            e["name"] = "expert_gemm_v9_" + str(len(e["name"]))
        return e
    for order in ("joined", "unjoined"):
        path = _rewritten(ENGINES / f"torch-{order}-graphs.json.gz",
                          tmp_path / f"{order}.json.gz", rename)
        o = analyze_files([path])["ordering"]
        assert o["verdict"] == EXPECTED[order] and o["default_guard"] == "routed-expert ranges"


def test_graph_replays_without_an_eager_step_name_the_flag(tmp_path):
    def drop_reference(e):
        return None if str(e.get("name", "")).startswith("eager_reference_step") else e
    path = _rewritten(ENGINES / "torch-joined-graphs.json.gz", tmp_path / "bare.json.gz",
                      drop_reference)
    o = analyze_files([path])["ordering"]
    assert o["verdict"] == "unknown"
    assert "--reference FILE" in o["reason"]
