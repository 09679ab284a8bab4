"""service/stats/gate.py: many comparisons judged at once (Benjamini-Hochberg, overall verdict)."""
from __future__ import annotations

import pytest
from scipy.stats import false_discovery_control

from service.stats.gate import Comparison, judge, overall


def comp(metric, base, cand, direction="higher", thr=0.5, why=None):
    return Comparison(metric, "", direction, thr, False, {"batch_size": 1}, 1, base, cand, why)


TIGHT = [[100.0, 100.01, 99.99], [100.02, 100.0, 100.01], [99.98, 99.99, 100.0]]


def test_bh_over_all_comparisons_and_overall():
    cands = [[[99.0, 99.01, 98.99]], [[100.0, 100.01, 99.99]], [[99.6, 99.61, 99.59]]]
    j = judge([comp(f"m{i}", TIGHT, c) for i, c in enumerate(cands)])
    raw = [r.assessment.p_value for r in j.metrics]
    assert [r.p_adjusted for r in j.metrics] == pytest.approx(list(false_discovery_control(raw)))
    assert [r.verdict for r in j.metrics] == ["regression", "pass", "pass"]
    assert j.verdict == "fail" and j.tested == 3 and j.correction.endswith("3 comparison(s)")


def test_no_baseline_is_inconclusive_with_its_reason():
    j = judge([comp("tok_s", [], [[1.0, 2.0, 3.0]], why="no baseline run in this series")])
    assert j.verdict == "inconclusive" and j.metrics[0].reason == "no baseline run in this series"
    assert j.tested == 0


def test_overall_rules():
    assert overall(["pass", "improvement"]) == "pass"
    assert overall(["pass", "inconclusive"]) == "inconclusive"
    assert overall(["inconclusive", "regression"]) == "fail"
    assert overall([]) == "inconclusive"
