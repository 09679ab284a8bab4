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
    """The change is the means' ratio; interval, bound and p come from one t on the log of the
    run means, transformed back (spec/api.md, Intervals and levels)."""
    means = [100.0, 101.0, 99.0, 100.5, 99.5]
    base = runs_around(means)
    cand = runs_around([99.0])
    a = assess(base, cand, "higher")
    k = 5
    logs = [math.log(m) for m in means]
    mu = sum(logs) / k
    sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / (k - 1))
    se = sd * math.sqrt(1 + 1 / k)
    d = math.log(99.0) - mu
    assert a.delta_pct == pytest.approx(-1.0)
    half95 = stats.t.ppf(0.975, k - 1) * se
    half90 = stats.t.ppf(0.95, k - 1) * se
    assert a.ci_low_pct == pytest.approx(100 * math.expm1(d - half95))
    assert a.ci_high_pct == pytest.approx(100 * math.expm1(d + half95))
    assert a.bound_pct == pytest.approx(100 * math.expm1(d - half90))  # tok/s: worse is down
    assert a.p_value == pytest.approx(2 * stats.t.sf(abs(d) / se, k - 1))
    assert a.spread_from == "baseline" and a.spread_runs == 5
    # the interval excludes 0 exactly when p < 0.05 (same statistic)
    assert (a.ci_high_pct < 0) == (a.p_value < 0.05)


def test_levels_follow_alpha():
    base = runs_around([100.0, 101.0, 99.0, 100.5, 99.5])
    wide = assess(base, runs_around([99.0]), "higher", alpha=0.01)
    narrow = assess(base, runs_around([99.0]), "higher", alpha=0.05)
    assert wide.ci_low_pct < narrow.ci_low_pct and wide.bound_pct < narrow.bound_pct
    _, reason = decide(wide, 0.5, wide.p_value, 0.01)
    assert "99% CI" in reason and "95%" not in reason


def test_interval_never_below_minus_100():
    """A throughput that collapses in one noisy run: the log interval stays above -100%."""
    base = runs_around([100.0, 160.0, 40.0, 130.0, 70.0], spread=1.0)
    a = assess(base, runs_around([20.0], spread=1.0), "higher")
    assert a.ci_low_pct > -100 and a.bound_pct > -100
    assert a.ci_low_pct < a.delta_pct < a.ci_high_pct


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
    lo, hi = math.log1p(a.ci_low_pct / 100), math.log1p(a.ci_high_pct / 100)
    d = (lo + hi) / 2  # the log-scale change, the middle of the log interval
    assert math.log1p(a.bound_pct / 100) == pytest.approx(
        d + (hi - d) * stats.t.ppf(0.95, 4) / stats.t.ppf(0.975, 4))
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


def test_one_baseline_run_without_history_is_never_judged():
    """Trials are never the unit (spec/api.md, Few baseline runs): one baseline run and no history
    is inconclusive,
    a 10% drop included, with the spec's message."""
    base = [[100.0, 100.01, 99.99, 100.0, 100.0]]
    for cand in ([100.0], [90.0]):
        a, (v, reason) = verdict(base, runs_around(cand))
        assert not a.runs_known and v == "inconclusive" and a.ci_low_pct is None
        assert reason == ("n=1: no interval (1 vs 1 runs); the baseline has 1 run and the series "
                          "no history: collect 2 more baseline runs")
    a, (v, reason) = verdict(base, runs_around([90.0]), thr=0.5)
    a = assess(base, runs_around([90.0]), "higher", history=[100.0, 100.4, 99.6, 100.2])
    assert a.p_value is None and "only 4 history runs (at least 5" in a.note


def test_history_gives_the_spread_for_few_baseline_runs():
    base = [[100.0, 100.01, 99.99, 100.0, 100.0]]
    hist = [100.0, 100.7, 99.3, 100.4, 99.6, 100.2, 99.8, 100.5]
    a = assess(base, runs_around([90.0]), "higher", history=hist)
    assert a.spread_from == "history" and a.spread_runs == 8 and a.df == 7
    logs = [math.log(h) for h in hist]
    mu = sum(logs) / 8
    sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / 7)
    assert a.sd_base_pct == pytest.approx(100 * sd)
    assert a.se_pct == pytest.approx(100 * sd * math.sqrt(2))
    assert decide(a, 0.5, a.p_value)[0] == "regression"
    a = assess(base, runs_around([100.05]), "higher", history=hist)
    assert decide(a, 0.5, a.p_value)[0] == "inconclusive"  # 0.7% run noise, one run a side


def test_one_candidate_run_is_judged_with_the_historys_clock_modes():
    """Three baseline runs that happened to land in one clock mode and a single candidate run
    in the faster one: a true -0.6% reads as -0.3%. From the baseline's own runs (a prediction
    interval, 2 df) it passes; with a history that shows both modes (0.3% apart) the spread
    pooled from the history and both sides is the modes' spread, and it cannot pass."""
    base = runs_around([100.0, 100.01, 99.995])
    cand = runs_around([100.0 * (1 - 0.006) * 1.003])
    a, (v, _) = verdict(base, cand)
    assert a.spread_from == "baseline" and v == "pass"
    hist = [100.0, 100.3, 100.02, 100.31, 99.98, 100.29, 100.01, 100.3, 99.99, 100.28]
    a = assess(base, cand, "higher", history=hist)
    assert a.spread_from == "history" and a.spread_runs == 10 and a.df == (10 - 1) + (3 - 1)
    assert decide(a, 0.5, a.p_value)[0] == "inconclusive"


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
    # on the log scale: each run mean's variance relative to its own mean squared
    floor = math.sqrt((0.5 / 5 / 100.0 ** 2 * 3 + 0.7 / 5 / 99.7 ** 2) / 4)
    assert a.sd_base_pct == pytest.approx(100 * floor)
    assert a.ci_low_pct < a.delta_pct < a.ci_high_pct


Z6 = (-1.3, -0.4, 0.2, 0.5, 1.0, 0.0)  # six run means' deviations, in run-to-run sds


def test_regression_needs_the_bound_nearest_no_change_past_the_threshold():
    """6 vs 6 runs spread 0.2%, 0.5% threshold: a -0.6% estimate is past the threshold and
    significant against no change, but its one-sided 95% bound nearest no change is not past
    -0.5%, so it is inconclusive (naming that bound); -1.2% is a regression, and its reason names
    the bound it tested."""
    base = runs_around([1000 * (1 + 0.002 * z) for z in Z6])
    for change, want in ((-0.6, "inconclusive"), (-1.2, "regression")):
        cand = runs_around([1000 * (1 + change / 100) * (1 + 0.002 * z) for z in reversed(Z6)])
        a, (v, why) = verdict(base, cand)
        assert a.p_value is not None and a.p_value < 0.001 and a.delta_pct < -0.5  # rule (a) met
        assert a.better_bound_pct is not None and a.better_bound_pct > a.delta_pct
        # the bound nearest no change: the worse end of the one-sided 95% interval's opposite
        half = stats.t.ppf(0.95, a.df) * a.se_pct / 100
        assert a.better_bound_pct == pytest.approx(
            100 * math.expm1(math.log1p(a.delta_pct / 100) + half), rel=1e-3)
        assert v == want, why
        assert f"bound nearest no change, {a.better_bound_pct:+.2f}%" in why
    assert "is past the 0.5% threshold" in why and "significant against none" in why


def test_an_improvement_needs_its_worse_side_bound_past_the_threshold():
    base = runs_around([1000 * (1 + 0.002 * z) for z in Z6])
    cand = runs_around([1006 * (1 + 0.002 * z) for z in reversed(Z6)])
    a, (v, why) = verdict(base, cand)
    assert a.bound_pct is not None and 0 < a.bound_pct < 0.5 < a.delta_pct
    assert v == "pass", why  # not shown past +0.5%, but a regression is ruled out
