"""service/stats/blocked.py: an interleaved experiment judged block by block."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from collectors.experiment import block_order
from service.stats.assess import decide
from service.stats.blocked import MIN_BLOCKS, assess_blocks, look_alpha


def test_block_order_is_abba_baab():
    order = "".join("A" if block_order(b)[0] == "baseline" else "B" for b in range(8))
    assert order == "ABBABAAB"  # blocks AB BA BA AB BA AB AB BA
    assert all(set(block_order(b)) == {"baseline", "candidate"} for b in range(16))


def test_block_differences_hand_computed():
    # drift moves both arms of a block together; the differences stay near -1%
    drift = [1.00, 1.03, 0.97, 1.05, 0.99]
    diffs = [-1.0, -1.1, -0.9, -1.05, -0.95]
    blocks = [([100 * f] * 3, [100 * f * (1 + d / 100)] * 3) for f, d in zip(drift, diffs)]
    a = assess_blocks(blocks, "higher")
    # each block's log ratio (spec/api.md, Intervals and levels), tested with one-sample t,
    # transformed back
    d = [math.log1p(x / 100) for x in diffs]
    mean = sum(d) / 5
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / 4) / math.sqrt(5)
    assert a.delta_pct == pytest.approx(100 * math.expm1(mean))
    assert a.ci_low_pct == pytest.approx(100 * math.expm1(mean - stats.t.ppf(0.975, 4) * se))
    assert a.bound_pct == pytest.approx(100 * math.expm1(mean - stats.t.ppf(0.95, 4) * se))
    assert a.p_value == pytest.approx(2 * stats.t.sf(abs(mean) / se, 4))
    assert decide(a, 0.5, a.p_value)[0] == "regression"
    # the same runs judged as unpaired runs would drown in the 3% drift
    from service.stats.assess import assess

    unpaired = assess([b for b, _ in blocks], [c for _, c in blocks], "higher")
    assert decide(unpaired, 0.5, unpaired.p_value)[0] == "inconclusive"


def test_too_few_blocks_and_aa():
    few = [([100.0] * 3, [99.0] * 3)] * (MIN_BLOCKS - 1)
    a = assess_blocks(few, "higher")
    assert a.p_value is None and decide(a, 0.5, None)[0] == "inconclusive"
    aa = [([100.0, 100.01], [100.0 + e, 100.01 + e]) for e in (0.01, -0.02, 0.015, -0.005)]
    a = assess_blocks(aa, "higher")
    assert decide(a, 0.5, a.p_value)[0] == "pass"


def test_looks_split_alpha():
    assert look_alpha(0.05, 1) == 0.05 and look_alpha(0.05, 8) == pytest.approx(0.00625)
    blocks = [([100.0] * 3, [99.4 + 0.1 * i] * 3) for i in range(4)]
    wide = assess_blocks(blocks, "higher", look_alpha(0.05, 8))
    narrow = assess_blocks(blocks, "higher", 0.05)
    assert wide.ci_low_pct < narrow.ci_low_pct and wide.bound_pct < narrow.bound_pct
