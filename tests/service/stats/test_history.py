"""service/stats/history.py: change points and noise figures on hand-made series."""
from __future__ import annotations

import math

import numpy as np
import pytest

from service.stats.history import RunFigure, change_points, noise


def test_change_point_at_the_step_only_past_threshold():
    vals = [100.0, 100.1, 99.9, 100.05, 99.95, 100.0, 97.0, 97.1, 96.9, 97.05, 96.95, 97.0]
    cps = change_points(vals, 1.0)
    assert len(cps) == 1 and cps[0].index == 6
    assert cps[0].before_mean == pytest.approx(100.0) and cps[0].after_mean == pytest.approx(97.0)
    assert cps[0].delta_pct == pytest.approx(-3.0)
    assert change_points(vals, 5.0) == []  # the same step under a 5% threshold
    assert change_points(vals[:5], 1.0) == []  # too short to say


def staircase(steps: int = 5, step_pct: float = -0.4, per_step: int = 6, noise_pct: float = 0.05,
              seed: int = 3) -> list[float]:
    rng = np.random.default_rng(seed)
    levels = [100.0 * (1 + step_pct / 100) ** i for i in range(steps + 1) for _ in range(per_step)]
    return [lv * (1 + rng.normal(0, noise_pct / 100)) for lv in levels]


def test_staircase_adds_up_to_one_change_point():
    """Five -0.4% steps, noise 0.05% (spec/api.md, Change points add up): no single cut passes a 2%
    threshold, yet
    the levels drift 2% from the reference: one change point, at the step where they add up
    (1.8%: the level must be past the threshold with its interval, 0.18% past it here)."""
    vals = staircase()
    cps = change_points(vals, 1.8, direction="higher")
    assert len(cps) == 1 and cps[0].index == 30  # the fifth step's first run
    assert cps[0].before_mean == pytest.approx(100.0, abs=0.05)
    assert cps[0].delta_pct == pytest.approx(-1.98, abs=0.1)
    # at 1%: one at the third step (-1.2%), then the reference moves; -2.0% is only -0.8% away
    cps = change_points(vals, 1.0, direction="higher")
    assert [c.index for c in cps] == [18]
    # the better direction never counts for an alert
    assert change_points([v * -1 + 200 for v in vals], 1.0, direction="higher") == []


def test_noise_figures():
    figs = [RunFigure(5, m, 0.5) for m in (100.0, 101.0, 99.0, 100.0)]
    n = noise(figs)
    means = np.array([100.0, 101.0, 99.0, 100.0])
    assert n.runs == 4 and n.trials_per_run == 5 and n.mean == pytest.approx(100.0)
    assert n.run_to_run_cv_pct == pytest.approx(means.std(ddof=1))
    assert n.trial_cv_pct == pytest.approx(0.5)
    assert n.block_cv_pct == pytest.approx(100 * np.std([100.5, 99.5], ddof=1) / 100)
    assert n.min_detectable_pct > n.min_detectable_pct_pooled > 0
    assert noise(figs[:2]).run_to_run_cv_pct is None
    assert math.isclose(noise([]).runs, 0)


def levels(*parts: tuple[float, int], noise_pct: float = 0.05, seed: int = 5) -> list[float]:
    rng = np.random.default_rng(seed)
    return [lv * (1 + rng.normal(0, noise_pct / 100)) for lv, n in parts for _ in range(n)]


def test_a_regression_after_a_fix_is_seen_again():
    """100 x20, 97 x20, 100 x20, 97 x20 at 0.5%: the recovery moves the reference, so the second
    drop is a change point too; the worse-only view keeps the two drops."""
    vals = levels((100, 20), (97, 20), (100, 20), (97, 20))
    both = change_points(vals, 0.5)
    assert [c.index for c in both] == [20, 40, 60]
    assert [round(c.delta_pct) for c in both] == [-3, 3, -3]
    worse = change_points(vals, 0.5, direction="higher")
    assert [c.index for c in worse] == [20, 60]
    assert worse == [c for c in both if c.delta_pct < 0]


def test_a_blip_never_masks_a_step():
    """100 x20, 95 x2, 100 x20, 97 x20: two runs are no segment of their own (MIN_SEGMENT), so
    the blip neither alerts nor moves the reference; the -3% step is the one change point."""
    vals = levels((100, 20), (95, 2), (100, 20), (97, 20))
    cps = change_points(vals, 0.5, direction="higher")
    assert [c.index for c in cps] == [42]
    assert cps[0].delta_pct == pytest.approx(-3.0, abs=0.1)
    assert [c.index for c in change_points(vals, 0.5)] == [42]


def test_a_segment_needs_its_level_past_the_threshold_with_its_interval():
    """Pure noise (1% run to run) cut finely (a small PELT penalty): segments whose levels are
    past the 0.5% threshold from the reference are no change point unless the one-sided test
    of "past the threshold" rejects (Welch's t, the history's noise as the floor)."""
    from service.stats.history import past_threshold, scale_of, segments

    rng = np.random.default_rng(1)
    vals = list(100 * (1 + rng.normal(0, 0.01, 60)))
    segs = segments(vals, penalty=1.0)
    ref = np.asarray(vals[segs[0][0]:segs[0][1]])
    past = [(s, e) for s, e in segs[1:] if abs(np.mean(vals[s:e]) / ref.mean() - 1) >= 0.005]
    assert len(past) >= 3  # the threshold alone would call these changes
    assert not any(past_threshold(np.asarray(vals[s:e]), ref, 0.5, scale_of(vals), 59)
                   for s, e in past)
    assert change_points(vals, 0.5, penalty=1.0) == []


def test_a_step_inside_the_threshold_never_alerts_and_one_past_it_does_in_three_runs():
    """-0.45% against 0.5% (noise 0.15%, 100 runs before): never a change point, however many
    runs; -3%: one, at the step, once three runs hold it."""
    rng = np.random.default_rng(4)
    before = list(100 * (1 + rng.normal(0, 0.0015, 100)))
    inside = before + list(99.55 * (1 + rng.normal(0, 0.0015, 100)))
    assert change_points(inside, 0.5, direction="higher") == []
    step = before + list(97.0 * (1 + rng.normal(0, 0.0015, 3)))
    assert [c.index for c in change_points(step, 0.5, direction="higher")] == [100]
    assert change_points(step[:-1], 0.5, direction="higher") == []


def test_a_drift_is_one_alert_per_episode():
    """-0.05% a run for 60 runs (noise 0.1%): every change point after the first continues the
    drift (it moves the reference, raises no alert of its own)."""
    rng = np.random.default_rng(6)
    vals = [100 * (1 - 0.0005 * min(max(i - 100, 0), 60)) * (1 + rng.normal(0, 0.001))
            for i in range(200)]
    cps = change_points(vals, 0.5, direction="higher")
    assert len(cps) >= 2 and not cps[0].continues and all(c.continues for c in cps[1:])
