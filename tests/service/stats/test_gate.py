"""service/stats/gate.py: many comparisons judged at once (Holm against the thresholds,
Benjamini-Hochberg against no change, overall verdict) and the history's rules."""
from __future__ import annotations

import numpy as np
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


def _runs(level: float, n: int, seed: int, sd: float = 0.0015) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [list(level * (1 + rng.normal(0, sd)) * (1 + rng.normal(0, 1e-4, 5))) for _ in range(n)]


def hcomp(metric, base, cand, history=()):
    return Comparison(metric, "", "higher", 0.5, False, {}, None, base, cand, history=history)


def _history(seed: int, n: int = 20) -> tuple[float, ...]:
    return tuple(float(np.mean(r)) for r in _runs(1000.0, n, seed))


def test_a_low_single_baseline_run_cannot_make_a_pass_or_improvement():
    """One baseline run 3% below its 20-run history, the candidate truly -1%: named, and
    inconclusive instead of the improvement it would otherwise read as."""
    base = [[v * 0.97 for v in _runs(1000.0, 1, 1)[0]]]
    r = judge([Comparison("tok_s", "tok/s", "higher", 0.5, False, {}, None, base,
                          _runs(990.0, 1, 2), baseline_ids=(7,), history=_history(3))]).metrics[0]
    assert r.assessment.delta_pct > 1.5 and r.verdict == "inconclusive"
    assert r.reason.startswith("n=1 (1 vs 1 runs") and "run 7 (robust z -" in r.reason
    assert "the improvement rests on a baseline run far outside the series' history" in r.reason
    assert r.assessment.without.delta_pct == pytest.approx(-1.0, abs=0.5)


def test_an_outlying_baseline_run_is_named_where_the_verdict_holds_without_it():
    base = [[v * 0.97 for v in _runs(1000.0, 1, 1)[0]]] + _runs(1000.0, 1, 4)
    r = judge([Comparison("tok_s", "tok/s", "higher", 0.5, False, {}, None, base,
                          _runs(950.0, 2, 2), history=_history(3))]).metrics[0]
    assert r.verdict == "regression" and "baseline run 1 (robust z" in r.reason
    assert "(the verdict holds without it)" in r.reason


def test_history_spread_is_pooled_so_more_candidate_runs_never_lose_degrees_of_freedom():
    h = _history(5)
    dfs = [judge([hcomp("m", _runs(1000.0, 1, 6) if k else _runs(1000.0, 2, 6),
                       _runs(1000.0, m, 7), h)]).metrics[0].assessment.df
           for k, m in ((1, 1), (1, 2), (1, 3), (0, 3))]
    assert dfs == [19.0, 20.0, 21.0, 22.0]


def test_history_outliers_and_steps_do_not_widen_the_spread():
    clean = _history(8, 24)
    steps = tuple(v * (0.98 if i >= 12 else 1.0) for i, v in enumerate(clean))
    crashed = tuple(v * (0.9 if i in (3, 15) else 1.0) for i, v in enumerate(clean))
    se = [judge([hcomp("m", _runs(1000.0, 1, 9), _runs(1000.0, 1, 10), h)]).metrics[0]
          .assessment.se_pct for h in (clean, steps, crashed)]
    assert se[1] == pytest.approx(se[0], rel=0.25) and se[2] == pytest.approx(se[0], rel=0.25)


def test_holm_over_the_tests_against_the_threshold():
    """Eight comparisons each just past the threshold by its own bound: each alone is a
    regression, together Holm's correction holds them inconclusive."""
    base = [[1000.0 + d] * 3 for d in (-1.0, 0.0, 1.0)]
    cand = [[992.0 + d] * 3 for d in (-1.0, 0.0, 1.0)]
    one = judge([hcomp("m0", base, cand)])
    many = judge([hcomp(f"m{i}", base, cand) for i in range(8)])
    assert one.metrics[0].verdict == "regression" and one.metrics[0].p_past < 0.05
    assert {r.verdict for r in many.metrics} == {"inconclusive"} and many.verdict == "inconclusive"
    assert all(r.p_past >= 0.05 for r in many.metrics)
    assert "correction over the request" in many.metrics[0].reason
    assert many.correction.startswith("holm against the thresholds")


def test_kv_capacity_tolerates_the_allocators_granularity():
    """The same code on two H200 leases: 16,284,100 vs 16,280,004 tokens (-0.025%) passes at the
    0.1% threshold; a drop past it is a regression."""
    base = [[16284100.0]] * 3
    ok = judge([Comparison("kv_capacity_tokens", "tokens", "higher", 0.1, True, {}, None, base,
                           [[16280004.0]])]).metrics[0]
    bad = judge([Comparison("kv_capacity_tokens", "tokens", "higher", 0.1, True, {}, None, base,
                            [[16200000.0]])]).metrics[0]
    assert ok.verdict == "pass" and "within 0.1% of it" in ok.reason
    assert bad.verdict == "regression" and "-84,100" in bad.reason


def test_one_run_a_side_without_history_shows_the_change():
    r = judge([hcomp("m", [[100.0]], [[97.0]])]).metrics[0]
    assert r.verdict == "inconclusive" and r.assessment.delta_pct == pytest.approx(-3.0)
    assert r.reason.startswith("n=1: no interval (1 vs 1 runs)")
