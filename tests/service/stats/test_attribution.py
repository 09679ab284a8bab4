"""service/stats/attribution.py on small hand-made designs."""
from __future__ import annotations

import pytest
from scipy import stats

from service.stats.attribution import RunFacts, attribute, finding


def design(det_by_m: dict[int, int], confound: bool = False) -> list[RunFacts]:
    rows = []
    for m in (1, 8):
        for order in ("overlap", "late"):
            for rep in range(3):
                cfg = {"batch_size": m, "shared_experts": order}
                if confound:
                    cfg["variant"] = f"v{m}"
                rows.append(RunFacts(cfg, 100.0 * m * (1 + 0.001 * rep), 0.1 + 0.01 * rep,
                                     det_by_m[m], 5))
    return rows


def test_determinism_follows_the_key_that_splits_it():
    rows = design({1: 5, 8: 1})
    fs = attribute(rows, "determinism")
    assert fs[0].key == "batch_size" and fs[0].explains == pytest.approx(1.0)
    # identical vs not, by batch size: M=1 30/0, M=8 6/24 (Fisher's exact test)
    assert fs[0].p_value == pytest.approx(stats.fisher_exact([[30, 0], [6, 24]]).pvalue)
    other = fs[1]
    assert other.key == "shared_experts" and other.explains == pytest.approx(0.0, abs=1e-12)
    assert other.p_value == pytest.approx(1.0)
    sentence = finding("determinism", fs)
    assert sentence.startswith("non-identical repeats follow batch_size (explains 100%")
    assert "shared_experts explains 0% (p=1)" in sentence


def test_confounded_keys_are_named_together():
    fs = attribute(design({1: 5, 8: 1}, confound=True), "mean")
    assert [f.key for f in fs] == ["batch_size/variant", "shared_experts"]
    assert fs[0].effect == pytest.approx(700.0, rel=1e-3)  # M=8 runs at 8x the tok/s of M=1
