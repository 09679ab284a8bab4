"""The TP8 shape captured on one H100 (eight ranks sharing the GPU over gloo): its eight rank
traces summarize with the same roles on every rank, each rank named by its rank and local GPU."""
from __future__ import annotations

import json

from collectors.traces import analyze_files
from tests.conftest import ROOT

TP8 = ROOT / "data" / "h100" / "tp8-shared"


def test_eight_ranks_on_one_gpu_share_their_roles():
    s = analyze_files(sorted((TP8 / "traces").glob("trace_M1_rank*.json.gz")))
    mains = [(r["rank"], r["gpu"], r["stream"]) for r in s["streams"] if r["role"] == "main"]
    assert mains == [(r, 0, 7) for r in range(8)]
    assert [r["device_label"] for r in s["streams"] if r["role"] == "main"] == [
        f"rank {r} / GPU 0" for r in range(8)]
    assert [r["rank"] for r in s["ranks"]] == list(range(8)) and s["steps"] == 32
    assert not [w for w in s["warnings"] if "main stream differs" in w]
    idle = [r["aux_idle_per_step_us"] for r in s["ranks"]]
    assert max(idle) / min(idle) < 1.05  # one definition of the aux lane on every rank


def test_the_record_says_the_gpus_are_shared():
    (rec,) = json.loads((TP8 / "run.json").read_text())
    assert rec["config"]["tp"] == 8
    assert rec["config"]["gpu_sharing"].startswith("8 ranks round-robin on 1 GPU(s), gloo")
    assert "not a speed figure" in rec["config"]["gpu_sharing"]
