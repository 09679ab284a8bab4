"""The noise card's figures: clock modes, the detectable change, A/A false alarms from a
history."""
from __future__ import annotations

import math
import random

from scipy import stats

from service.stats import noisecard


def runs(levels: list[float], rng: random.Random, trials: int = 5) -> list[list[float]]:
    return [[lv * (1 + rng.gauss(0, 0.001)) for _ in range(trials)] for lv in levels]


def test_two_clock_modes_are_seen_and_one_is_one():
    rng = random.Random(1)
    one = [1000 * (1 + rng.gauss(0, 0.003)) for _ in range(30)]
    two = [(1000 if i % 2 else 1030) * (1 + rng.gauss(0, 0.002)) for i in range(30)]
    assert noisecard.modes(one) == 1
    assert noisecard.modes(two) == 2
    assert noisecard.modes(one[:9]) is None  # too few run levels to say


def test_the_detectable_change_shrinks_with_the_runs_a_side():
    d = noisecard.detectable(0.5, 20)
    assert list(d) == [1, 3, 5] and d[1] > d[3] > d[5]
    t = stats.t.ppf(0.975, 19) + stats.norm.ppf(0.8)
    assert math.isclose(d[3], t * 0.5 * math.sqrt(2 / 3))
    assert noisecard.detectable(None, 20) == {} and noisecard.detectable(0.5, 2) == {}


def test_aa_gates_from_a_quiet_history_rarely_say_regression():
    rng = random.Random(2)
    history = runs([1000 * (1 + rng.gauss(0, 0.004)) for _ in range(30)], rng)
    card = noisecard.card(history, "higher", 1.0, False, seed=3)
    assert card.runs == 30 and card.aa_draws == noisecard.DRAWS
    assert set(card.aa_false_alarm_pct) == {1, 3}
    assert all(v <= 10 for v in card.aa_false_alarm_pct.values()), card
    assert card.modes == 1 and 0.2 < card.run_to_run_cv_pct < 0.6
    again = noisecard.card(history, "higher", 1.0, False, seed=3)
    assert again == card  # the same history, the same card


def test_a_short_history_has_no_aa_rate_for_sizes_it_cannot_draw():
    rng = random.Random(4)
    card = noisecard.card(runs([1000.0] * 6, rng), "higher", 1.0, False)
    assert set(card.aa_false_alarm_pct) == {1}  # 3 a side needs 9 runs
