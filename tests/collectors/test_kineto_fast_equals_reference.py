"""The fast Kineto path (phase-tagged structs, pieces, forked processes) and the reference path
(the standard library's json, one event at a time) give the same summary on the real traces."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors.traces import kineto, kineto_events, kineto_split
from collectors.traces.pipeline import analyze_files

ROOT = Path(__file__).resolve().parents[2]
RANK_SET = [ROOT / "data/h200/resident/torch/traces/trace_M1_rank0.json.gz",
            ROOT / "data/h200/resident/torch/traces/trace_M1_rank1.json.gz"]
SINGLES = [ROOT / "data/engines/vllm_piecewise_prefilldecode_mi300.json.gz",
           *sorted((ROOT / "data/h200/engines").glob("torch-*.json.gz")),
           ROOT / "tests/data/kineto_1layer_M8.json.gz",
           ROOT / "tests/data/kineto_1layer_M4_epoch_us.json.gz"]


def _reference(monkeypatch, paths) -> str:
    with monkeypatch.context() as m:
        m.setattr(kineto_events, "msgspec", None)
        m.setattr(kineto, "msgspec", None)
        return json.dumps(analyze_files(paths, jobs=1), sort_keys=True)


@pytest.mark.parametrize("paths", [[p] for p in SINGLES] + [RANK_SET],
                         ids=lambda ps: "+".join(p.name for p in ps))
def test_fast_path_gives_the_reference_summary(paths, monkeypatch):
    assert all(p.is_file() for p in paths)
    want = _reference(monkeypatch, paths)
    assert json.dumps(analyze_files(paths), sort_keys=True) == want  # one call, tagged
    with monkeypatch.context() as m:  # pieces in two forked processes, tagged where it applies
        m.setattr(kineto_split, "SPLIT_MIN_BYTES", 1)
        m.setattr(kineto_split, "PIECE_BYTES", 1 << 16)
        got = analyze_files(paths, jobs=1)
    assert json.dumps(got, sort_keys=True) == want


def test_the_tagged_scan_takes_the_real_traces():
    """The fast path is not a fallback in disguise: the real traces decode tagged."""
    for p in SINGLES[:-1] + RANK_SET:  # the epoch-time trace goes exact, as it must
        events = kineto_events.decode_tagged(kineto.read_bytes(p), True)
        assert events is not None, p.name
        assert any(type(e) is kineto_events.Complete for e in events)
