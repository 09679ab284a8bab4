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
