"""What a comparison makes of series that do not know their server (service/runs/unknown.py)."""
from __future__ import annotations

import pytest

from service.errors import Invalid
from service.runs.unknown import check_unknown, unvaried

KNOWN = {"concurrency": 8, "model": "Qwen3ForCausalLM", "tp": 2, "dtype": "bfloat16",
         "unknown": "gpu", "gpu": "", "gpu_count": 2}
BARE = {"concurrency": 8, "unknown": "model,tp,gpu,gpu_count", "gpu": "", "gpu_count": 0}


def test_only_unknowns_apart_is_refused_naming_keys_and_flags():
    with pytest.raises(Invalid) as e:
        check_unknown(BARE, [KNOWN], 9, ())
    assert e.value.code == "identity_unknown"
    assert str(e.value).startswith("run_ids: model unknown, tp unknown, gpu_count unknown, dtype "
                                   "unknown in the candidate's series (candidate run 9; the other "
                                   "side has model='Qwen3ForCausalLM', tp=2, gpu_count=2, "
                                   "dtype='bfloat16')")
    assert str(e.value).endswith("give --config model=... --config tp=... --gpu-count --config "
                                 "dtype=... at ingest or --vary model --vary tp --vary dtype")


def test_a_known_difference_is_no_refusal():
    other = {**BARE, "concurrency": 32}  # both say their concurrency: another workload
    check_unknown(other, [KNOWN], 9, ())


def test_a_gpu_count_posted_as_nothing_is_unknown():
    old = {"concurrency": 8, "gpu": "NVIDIA H200", "gpu_count": 0}
    new = {"concurrency": 8, "gpu": "NVIDIA H200", "gpu_count": 8}
    with pytest.raises(Invalid, match="gpu_count unknown in the baseline's series"):
        check_unknown(new, [old], 4, ())


def test_a_varied_key_is_no_longer_unknown():
    assert unvaried(BARE, ("model",)) == {"concurrency": 8, "unknown": "tp,gpu,gpu_count",
                                          "gpu": "", "gpu_count": 0}
    assert "unknown" not in unvaried({"unknown": "model"}, ("model",))
