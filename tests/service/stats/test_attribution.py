"""service/stats/attribution.py on small hand-made designs."""
from __future__ import annotations

from dataclasses import replace

import pytest
from scipy import stats

from service.stats.attribution import RunFacts, attribute, finding, identical_share


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
    """Runs are the unit: the test is on each run's share of repeats that match the reference
    repeat (the reference left out), never on repeats pooled across runs."""
    # at M=8 the three repeats of each order match the reference 1, 2 and 2 times of 4
    rows = [replace(r, identical=2 + (r.mean > 800.5)) if r.config["batch_size"] == 8 else r
            for r in design({1: 5, 8: 2})]
    fs = attribute(rows, "determinism")
    assert fs[0].key == "batch_size"
    assert fs[0].level_values == {"1": 1.0, "8": pytest.approx((0.25 + 0.5 + 0.5) / 3)}
    # by hand: the F test of batch size on the 12 run shares; shared_experts explains nothing,
    # so the residual is the within-level sum of squares on 12 - 3 = 9 df
    shares = [identical_share(r) for r in rows]
    m8 = [s for s, r in zip(shares, rows) if r.config["batch_size"] == 8]
    mean8, grand = sum(m8) / 6, (6 * 1.0 + sum(m8)) / 12
    ss_between = 6 * (1.0 - grand) ** 2 + 6 * (mean8 - grand) ** 2
    ss_within = sum((x - mean8) ** 2 for x in m8)
    assert fs[0].p_value == pytest.approx(stats.f.sf(ss_between / (ss_within / 9), 1, 9))
    other = fs[1]
    assert other.key == "shared_experts" and other.explains < 0.05
    sentence = finding("determinism", fs)
    assert sentence.startswith("non-identical repeats follow batch_size")


def test_reference_repeat_is_not_its_own_match_and_one_trial_has_no_cv():
    assert identical_share(RunFacts({}, 1.0, None, 1, 5)) == 0.0  # only the reference matched
    assert identical_share(RunFacts({}, 1.0, None, 5, 5)) == 1.0
    assert identical_share(RunFacts({}, 1.0, None, 1, 1)) is None  # one repeat says nothing
    rows = [RunFacts({"k": k}, 100.0 + i, None if i == 0 else 0.1 * (k + 1), None, None)
            for k in (0, 1) for i in range(4)]
    fs = attribute(rows, "spread")
    # the single-trial runs (CV None) drop out: 3 runs per level remain, not 4 with a fake 0
    assert fs[0].level_values == {"0": pytest.approx(0.1), "1": pytest.approx(0.2)}


def test_confounded_keys_are_named_together():
    fs = attribute(design({1: 5, 8: 1}, confound=True), "mean")
    assert [f.key for f in fs] == ["batch_size/variant", "shared_experts"]
    assert fs[0].effect == pytest.approx(700.0, rel=1e-3)  # M=8 runs at 8x the tok/s of M=1


def test_one_run_per_level_gives_shares_without_a_test():
    """A batch-size matrix measured once per M (M=1/4/7/8, four runs, four parameters) leaves no
    residual degrees of freedom: batch size explains all of it, and no p-value is claimed
    (statsmodels' F test used to refuse the design, and the page said so)."""
    rows = [RunFacts({"batch_size": m}, 87.7 * m ** 0.8, 0.2) for m in (1, 4, 7, 8)]
    fs = attribute(rows, "mean")
    assert [f.key for f in fs] == ["batch_size"]
    assert fs[0].explains == pytest.approx(1.0) and fs[0].p_value is None
    assert finding("mean", fs) == ("the runs leave no room for a test of the tok_s run means "
                                   "(as many groups as runs): batch_size explains 100%")


def test_nested_keys_with_a_residual_are_still_tested():
    """Two partly nested keys over five runs leave one residual degree of freedom: the design's
    rank, not its nominal parameter count, decides whether a test is made."""
    rows = [RunFacts({"batch_size": m, "variant": v}, y, 0.2) for m, v, y in
            ((1, "x", 87.0), (1, "x", 87.4), (2, "x", 120.0), (3, "y", 150.0), (4, "y", 171.0))]
    fs = attribute(rows, "mean")
    assert any(f.p_value is not None for f in fs)
