"""service/stats/assess.py on hand-computed cases (no database, no HTTP)."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from service.stats.assess import MAX_MORE_RUNS, assess, decide, runs_to_settle


def runs_around(means: list[float], spread: float = 0.001) -> list[list[float]]:
    """Runs of 5 trials whose mean is exactly the given run mean."""
    return [[m - 2 * spread, m - spread, m, m + spread, m + 2 * spread] for m in means]


def verdict(base, cand, direction="higher", thr=0.5):
    a = assess(base, cand, direction)
    return a, decide(a, thr, a.p_value, 0.05)


def test_one_estimator_hand_computed():
    base = runs_around([100.0, 101.0, 99.0, 100.5, 99.5])
    cand = runs_around([99.0])
    a = assess(base, cand, "higher")
    k = 5
    sd = math.sqrt(sum((m - 100.0) ** 2 for m in [100.0, 101.0, 99.0, 100.5, 99.5]) / (k - 1))
    se = sd * math.sqrt(1 + 1 / k)
    assert a.delta_pct == pytest.approx(-1.0)
    half95 = stats.t.ppf(0.975, k - 1) * se
    half90 = stats.t.ppf(0.95, k - 1) * se
    assert a.ci_low_pct == pytest.approx(-1.0 - half95)
    assert a.ci_high_pct == pytest.approx(-1.0 + half95)
    assert a.bound_pct == pytest.approx(-1.0 - half90)  # the worse side of tok/s is down
    assert a.p_value == pytest.approx(2 * stats.t.sf(1.0 / se, k - 1))
    # the interval excludes 0 exactly when p < 0.05 (same statistic)
    assert (a.ci_high_pct < 0) == (a.p_value < 0.05)


def test_mean_not_median_when_trials_stall():
    """2 of 5 trials stalled: the change is the mean's (-4%), not the median's (0%)."""
    base = runs_around([100.0, 100.02, 99.98, 100.01, 99.99], spread=0.01)
    cand = [[100.0, 100.0, 100.0, 90.0, 90.0]]
    a, (v, _) = verdict(base, cand)
    assert a.delta_pct == pytest.approx(-4.0, abs=0.01)
    assert a.candidate.median == pytest.approx(100.0)
    assert v != "pass"


def test_small_change_noisy_baseline_is_inconclusive():
    """-0.2% against 5 runs spread +-3%: a 10% regression is as likely; not a pass."""
    base = runs_around([100.0, 103.0, 97.0, 102.0, 98.0])
    a, (v, reason) = verdict(base, runs_around([99.8]))
    assert a.delta_pct == pytest.approx(-0.2)
    assert v == "inconclusive"
    assert a.bound_pct < -5
    assert f"even {MAX_MORE_RUNS} more runs" in reason or "more run(s) per side" in reason


def test_small_change_tight_baseline_passes():
    base = runs_around([100.0, 100.03, 99.97, 100.02, 99.98])
    a, (v, reason) = verdict(base, runs_around([99.8]))
    assert v == "pass" and a.delta_pct == pytest.approx(-0.2)
    assert -0.5 < a.bound_pct < -0.2 and "rules out a regression of 0.5%" in reason


def test_large_tight_rise_is_improvement_and_drop_is_regression():
    base = runs_around([100.0, 100.03, 99.97, 100.02, 99.98])
    _, (v, _) = verdict(base, runs_around([105.0]))
    assert v == "improvement"
    _, (v, _) = verdict(base, runs_around([99.0]))
    assert v == "regression"
    # latency: a rise is the worse side
    a, (v, _) = verdict(base, runs_around([101.0]), direction="lower", thr=1.0)
    assert a.bound_pct == pytest.approx(a.delta_pct + (a.ci_high_pct - a.delta_pct)
                                        * stats.t.ppf(0.95, 4) / stats.t.ppf(0.975, 4))
    _, (v, _) = verdict(base, runs_around([100.2]), direction="lower", thr=1.0)
    assert v == "pass"


def test_within_threshold_is_never_a_regression():
    base = runs_around([100.0, 100.001, 99.999, 100.0005])
    a, (v, _) = verdict(base, runs_around([99.7]))  # -0.3%, hugely significant
    assert a.p_value < 1e-6 and v == "pass"


def test_runs_to_settle_is_sane():
    """A +48% change against a noisy baseline needs a few runs, never thousands."""
    base = runs_around([100.0, 120.0, 80.0])
    a, (v, reason) = verdict(base, runs_around([148.0]))
    assert v == "inconclusive"
    msg = runs_to_settle(a, 0.5)
    n = int(msg.split("about ")[1].split()[0])
    assert 1 <= n <= 10 and msg in reason
    # a tiny change against a very noisy baseline: say which bound 50 more runs would reach
    a = assess(runs_around([100.0, 130.0, 70.0]), runs_around([100.1]), "higher")
    msg = runs_to_settle(a, 0.5)
    assert msg.startswith(f"even {MAX_MORE_RUNS} more runs per side would bring the bound only to")


def test_unknown_run_spread_never_passes():
    base = [[100.0, 100.01, 99.99, 100.0, 100.0]]
    a, (v, reason) = verdict(base, runs_around([100.0]))
    assert not a.runs_known and v == "inconclusive"
    assert "run-to-run spread is unknown" in reason and "2 more baseline run(s)" in reason
    a, (v, _) = verdict(base, runs_around([90.0]))
    assert v == "regression"  # a 10% drop is evidence even without run-to-run spread


def test_fewer_than_three_samples_and_exact():
    a, (v, reason) = verdict([[1.0, 2.0]], [[1.0, 2.0, 3.0]])
    assert v == "inconclusive" and "baseline has 2" in reason
    a = assess([[578368], [578368]], [[578352]], "higher", exact=True)
    assert decide(a, 0.0, None)[0] == "regression" and "-16" in a.note
    a = assess([[578368]], [[578368]], "higher", exact=True)
    assert decide(a, 0.0, None) == ("pass", "unchanged at 578,368")


def test_trial_noise_floors_lucky_baselines():
    """Three baseline runs with identical means cannot make the gate overconfident: the spread
    of a run mean is floored by the trials' own noise (variances 0.5 and 0.7 over 5 trials)."""
    base = [[99.0, 100.0, 101.0, 100.0, 100.0]] * 3
    a = assess(base, [[99.0, 100.0, 101.0, 99.0, 99.5]], "higher")
    floor = math.sqrt((0.5 / 5 * 3 + 0.7 / 5) / 4)
    assert a.sd_base_pct == pytest.approx(100 * floor / 100.0)
    assert a.ci_low_pct < a.delta_pct < a.ci_high_pct
