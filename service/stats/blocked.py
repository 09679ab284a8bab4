"""An interleaved experiment, judged block by block. Pure: numbers in, an Assessment out.

Each block holds one baseline and one candidate run made back to back on one host; its
difference carries the change under test, while drift of the machine (clocks, temperature,
neighbours) cancels within the block. For positive values the difference is the log of the
ratio of the run means (spec/api.md, Intervals and levels), transformed back to percent, so an
interval
never reaches -100%; else the difference relative to the baseline mean. The blocks' differences
are tested with a one-sample t (scipy), and the verdict follows
the gate's rules (service/stats/assess.decide): regression/improvement when the one-sided bound
nearest no change is past the threshold and the change significant, pass when the one-sided
bound rules out a regression of the threshold's size.

Sequential use (`--until-decided`): the experiment is looked at after every block from the
first look on, up to `max_looks` looks. Each look tests at alpha / max_looks (Bonferroni over
the looks), so the chance of any false alarm, or of any false pass, over all looks together
stays at or below alpha whatever the stopping time (bench/experiment_sequential.py measures it).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from .assess import Assessment, side

MIN_BLOCKS = 3


def assess_blocks(blocks: Sequence[tuple[Sequence[float], Sequence[float]]], direction: str,
                  alpha: float = 0.05) -> Assessment:
    """`blocks`: (baseline trials, candidate trials) per block. The interval is at 1 - alpha
    (0.95 for a single look), the bound at 1 - alpha one-sided, p two-sided."""
    higher = direction == "higher"
    base = [list(b) for b, _ in blocks]
    cand = [list(c) for _, c in blocks]
    b_side, c_side = side(base), side(cand)
    k = len(blocks)
    method = f"blocked: {k} interleaved block(s), one-sample t on block differences"
    if k < MIN_BLOCKS or any(not b or not c for b, c in blocks):
        return Assessment(b_side, c_side, None, None, None, None, None, method, higher,
                          f"{k} complete block(s); at least {MIN_BLOCKS} are needed",
                          k_runs=k, m_runs=k, runs_known=False)
    b_means = np.array([np.mean(b) for b in base])
    c_means = np.array([np.mean(c) for c in cand])
    center = float(np.mean(b_means))
    if center == 0:
        return Assessment(b_side, c_side, None, None, None, None, None, method, higher,
                          "the baseline mean is zero", k_runs=k, m_runs=k, runs_known=False)
    log = bool((b_means > 0).all() and (c_means > 0).all())
    d = np.log(c_means / b_means) if log else (c_means - b_means) / abs(center)

    def back(x: float) -> float:
        return 100.0 * math.expm1(x) if log else 100.0 * x

    mean_d = float(d.mean())
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(k)
    df = k - 1
    if se == 0:
        p = 0.0 if mean_d != 0 else 1.0
        half2 = half1 = 0.0
    else:
        p = float(2 * stats.t.sf(abs(mean_d) / se, df))
        half2 = float(stats.t.ppf(1 - alpha / 2, df)) * se
        half1 = float(stats.t.ppf(1 - alpha, df)) * se
    bound = back(mean_d - half1) if higher else back(mean_d + half1)
    # runs_to_settle() plans with per-side spreads: a block's difference spread, split evenly
    sd_side = 100.0 * sd / math.sqrt(2)
    return Assessment(b_side, c_side, back(mean_d), back(mean_d - half2), back(mean_d + half2),
                      bound, p, method + (" (log ratios)" if log else ""), higher,
                      se_pct=100.0 * se, df=df, k_runs=k, m_runs=k, sd_base_pct=sd_side,
                      sd_cand_pct=sd_side, runs_known=True, spread_from="blocks", spread_runs=k,
                      better_bound_pct=back(mean_d + half1) if higher else back(mean_d - half1))


def look_alpha(alpha: float, max_looks: int) -> float:
    """The level each look is tested at so that all looks together keep `alpha`."""
    return alpha / max(1, max_looks)
