"""One metric of one series: baseline runs against candidate runs. Pure: numpy/scipy in,
dataclasses out.

One estimator for everything reported (spec/api.md, "Gate" and Intervals and levels): the relative
difference of the means of run means, `delta_pct = 100 * (mean(candidate run means) -
mean(baseline run means)) / mean(baseline run means)`. For a metric with positive values its
interval, its one-sided bound on the worse side and its p-value come from one t statistic on the
log of the run means, transformed back, so an interval never reaches -100%. The interval is at
1 - alpha (two-sided), the bound at 1 - alpha one-sided: the printed level follows alpha.

Runs are the unit, with trials nested in them; trials are never the unit (spec/api.md, Few baseline
runs):
- for a baseline of fewer than MIN_BASELINE_RUNS runs, or a single candidate run, with a
  history of the series (run means of >= MIN_HISTORY runs besides the compared ones, given by
  the caller; its levels and its own outliers taken out, stats/robust.py), the run-to-run
  spread is pooled from the history's runs, the baseline's and the candidate's, t with their
  summed degrees of freedom, `spread_from = "history"`: the spread holds the clock modes the series
  has shown, and more runs on either side never give less power;
- from the baseline's runs when it has >= 3, floored by the within-run noise of a run
  mean (so three lucky runs cannot make the gate overconfident); one candidate run and no
  history: a prediction interval (t, k-1 df, sd * sqrt(1 + 1/k)); several: Welch's t on run means
  (Welch-Satterthwaite df);
- else no test: inconclusive with the change alone, asking for the runs that are missing
  (one run a side says `n=1: no interval`);
- fewer than 3 samples on a side and no history: no test.
- a baseline run far outside the history (robust z, stats/robust.py) is named, and the
  comparison is also assessed without it (`without`: the other baseline runs, or the history's
  median level where it was the only one), so it cannot make a pass or an improvement alone.
- exact metrics (KV-cache capacity): compared run by run with the baseline's typical value (the
  median of its runs), no statistics; a change within the metric's threshold, or within the
  values the baseline's own runs produced, is not a change (allocator granularity).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from collectors.verdicts import IMPROVEMENT, INCONCLUSIVE, PASS, REGRESSION

from .levels import level_pct
from .robust import Yardstick, far_outside, pooled_sd, yardstick

MIN_BASELINE_RUNS = 3  # runs of a baseline that give the run-to-run spread by themselves
MIN_HISTORY = 5  # history runs that may stand in for them
MAX_MORE_RUNS = 50  # what `inconclusive` may ask for; past it, say what bound would be reached


@dataclass(frozen=True)
class Side:
    """One side's summary: `mean` is the mean of run means (the estimator's), `median` and
    `stdev` are over all trials."""

    runs: int
    n: int
    mean: float | None
    median: float | None
    stdev: float | None


@dataclass(frozen=True)
class Assessment:
    baseline: Side
    candidate: Side
    delta_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    bound_pct: float | None  # one-sided 1-alpha bound on the worse side (worse end of the 1-2alpha CI)
    p_value: float | None  # two-sided, unadjusted, H0: no difference
    method: str
    higher_is_better: bool
    note: str = ""  # why there is no test, or what limits this one
    exact_verdict: str | None = None
    se_pct: float | None = None
    df: float | None = None
    k_runs: int = 0
    m_runs: int = 0
    sd_base_pct: float | None = None  # run-to-run sd used for the baseline, percent of its mean
    sd_cand_pct: float | None = None
    runs_known: bool = True  # False when the run-to-run spread is unknown
    spread_from: str | None = None  # "baseline", "history" or "candidate": where the spread came from
    spread_runs: int | None = None  # how many runs it came from
    better_bound_pct: float | None = None  # one-sided 1-alpha bound on the better side
    diff: float | None = None  # the difference on the analysis scale (log or relative)
    log_scale: bool = True
    outliers: tuple[str, ...] = ()  # baseline runs far outside the series' history, named
    without: Assessment | None = None  # the comparison without those runs

    @property
    def worse(self) -> bool | None:
        if self.delta_pct is None:
            return None
        return self.delta_pct < 0 if self.higher_is_better else self.delta_pct > 0


def side(runs: Sequence[Sequence[float]]) -> Side:
    vals = [v for r in runs for v in r]
    if not vals:
        return Side(0, 0, None, None, None)
    a = np.asarray(vals, dtype=float)
    means = [float(np.mean(r)) for r in runs if len(r)]
    return Side(len(runs), int(a.size), float(np.mean(means)), float(np.median(a)),
                float(a.std(ddof=1)) if a.size > 1 else None)


def fmt_value(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.4g}"


def _exact(b: Side, c: Side, base, cand, higher: bool,
           candidate_ids: Sequence[int] = (), threshold_pct: float = 0.0) -> Assessment:
    """Run by run: each candidate run's value (the median of its samples) against the
    baseline's typical value (the median of its runs' values). A candidate run is a drop, named
    by run, when it is worse than every value the baseline's runs produced AND further from the
    typical value than `threshold_pct` (the allocator's granularity: two leases of one code
    differ by a few blocks) and further than that from every value the baseline's own runs
    produced; every run better by the same rule is an improvement; else a pass. The
    baseline's worst run is never the reference: a value between it and the typical one is a
    drop unless it matches one the baseline produced."""
    typical = float(np.median([np.median(r) for r in base if len(r)]))
    seen = [float(np.median(r)) for r in base if len(r)]
    values = [float(np.median(r)) for r in cand if len(r)]
    names = [f"run {i}" for i in candidate_ids] if len(candidate_ids) == len(values) else \
        [f"candidate run {j + 1}" for j in range(len(values))]
    tol = abs(typical) * threshold_pct / 100.0

    def moved(v: float, down: bool) -> bool:
        """Past the tolerance from the typical value and from every value the baseline made."""
        return (v < typical if down else v > typical) and \
            all(abs(v - x) > tol for x in [typical, *seen] if x != v) and v not in seen

    worse = [(n, v) for n, v in zip(names, values) if moved(v, higher)]
    better = [(n, v) for n, v in zip(names, values) if moved(v, not higher)]
    of = f"the baseline's typical {fmt_value(typical)} (median of {b.runs} run" \
         f"{'s' if b.runs != 1 else ''})"
    worst = (min if higher else max)(values)
    delta = 100.0 * (worst - typical) / typical if typical else None

    def listed(rows: list[tuple[str, float]]) -> str:
        return ", ".join(f"{n} at {fmt_value(v)} ({v - typical:+,.0f})" for n, v in rows)

    within = f"within {threshold_pct:g}% of it or of a value the baseline's runs produced" \
        if tol else "at a value the baseline's runs produced"
    if worse:
        verdict = REGRESSION
        note = f"{len(worse)} of {len(values)} candidate run{'s' if len(values) != 1 else ''} " \
               f"{'below' if higher else 'above'} {of}, by more than {threshold_pct:g}% from it " \
               f"and from every baseline run's value: {listed(worse)}"
    elif better and len(better) == len(values):
        best = (max if higher else min)(values)
        delta = 100.0 * (best - typical) / typical if typical else None
        verdict = IMPROVEMENT
        note = f"every candidate run {'above' if higher else 'below'} {of}: {listed(better)}"
    else:
        verdict = PASS
        note = f"unchanged at {fmt_value(typical)}" if values == [typical] * len(values) else \
            f"every candidate run {within} ({of})"
    return Assessment(b, c, delta, delta, delta, delta, None, "exact", higher, note,
                      exact_verdict=verdict, k_runs=b.runs, m_runs=c.runs)


def _welch_df(vb: float, vc: float, nb: int, nc: int) -> float:
    """Welch-Satterthwaite degrees of freedom (variances of the two means)."""
    denom = (vb ** 2 / (nb - 1) if nb > 1 else 0.0) + (vc ** 2 / (nc - 1) if nc > 1 else 0.0)
    if vb + vc <= 0 or denom <= 0:
        return float(nb + nc - 2)
    return (vb + vc) ** 2 / denom


def _to_scale(means: np.ndarray, center: float, log: bool) -> np.ndarray:
    return np.log(means) if log else means / center


def _back(x: float, log: bool) -> float:
    """A difference on the analysis scale as a percent change of the baseline mean."""
    return 100.0 * math.expm1(x) if log else 100.0 * x


def _within_floor(runs: Sequence[Sequence[float]], center: float, log: bool) -> float:
    """The trial noise of one run mean on the analysis scale (runs of one trial say nothing)."""
    within = [np.var(r, ddof=1) / len(r) / (float(np.mean(r)) ** 2 if log else center ** 2)
              for r in runs if len(r) > 1 and (not log or np.mean(r) > 0)]
    return math.sqrt(float(np.mean(within))) if within else 0.0


def no_spread_note(k: int, history_runs: int) -> str:
    """Why a comparison has no run-to-run spread (spec/api.md, Few baseline runs)."""
    runs = f"{k} run{'s' if k != 1 else ''}"
    plural = "s" if history_runs != 1 else ""
    hist = "no history" if history_runs == 0 else \
        f"only {history_runs} history run{plural} (at least {MIN_HISTORY} are needed)"
    more = MIN_BASELINE_RUNS - k
    return f"the baseline has {runs} and the series {hist}: collect {more} more baseline run" \
           f"{'s' if more != 1 else ''}"


def _spread(yb: np.ndarray, yc: np.ndarray, yh: Yardstick, floor: float, scale: str
            ) -> tuple[str, int, float, float, float, float, str] | None:
    """Where the run-to-run spread comes from (module docstring). Returns (from, runs, sd_base,
    sd_cand, se, df, method), or None: no spread."""
    k, m = yb.size, yc.size
    if yh.runs >= MIN_HISTORY and (k < MIN_BASELINE_RUNS or m == 1):
        sd, df = pooled_sd(yh, [yb, yc])
        sd = max(sd, floor)
        own = [f"{n} {name} runs" for n, name in ((k, "baseline"), (m, "candidate")) if n > 1]
        pooled = f" pooled with the {' and '.join(own)}" if own else ""
        return ("history", yh.runs, sd, sd, sd * math.sqrt(1 / k + 1 / m), df,
                f"t on {scale} ({k} vs {m} runs), run-to-run spread from {yh.runs} runs of "
                f"the series' history{pooled} ({df:g} df)")
    if k >= MIN_BASELINE_RUNS:
        sd_b = max(float(yb.std(ddof=1)), floor)
        if m == 1:
            return ("baseline", k, sd_b, sd_b, sd_b * math.sqrt(1 + 1 / k), float(k - 1),
                    f"prediction interval from {k} baseline runs (t on {scale}, {k - 1} df)")
        sd_c = max(float(yc.std(ddof=1)), floor)
        vb, vc = sd_b ** 2 / k, sd_c ** 2 / m
        return ("baseline", k, sd_b, sd_c, math.sqrt(vb + vc), _welch_df(vb, vc, k, m),
                f"Welch t-test on {scale} ({k} vs {m} runs)")
    return None


def _outliers(yb: np.ndarray, yh: Yardstick, ids: Sequence[int], spread_from: str
              ) -> list[tuple[int, str, float]]:
    """(index, name, nearest level) of each baseline run far outside the series' history where
    the history gives the spread (which leaves its outliers out, so one in the baseline would
    move the level unseen; where the baseline's own runs give it, an outlier widens it)."""
    if yh.runs < MIN_HISTORY or spread_from != "history":
        return []
    return [(i, f"{f'run {ids[i]}' if len(ids) == yb.size else f'baseline run {i + 1}'} "
                f"(robust z {z:+.1f} against {yh.runs} history runs)", level)
            for i, z, level in far_outside(yb, yh)]


def _no_test(b: Side, c: Side, higher: bool, k: int, m: int, hist_runs: int,
             delta: float | None) -> Assessment:
    """No interval: the change alone, with what is missing (`n=1: no interval` where a side
    has one run)."""
    if b.n < 3 or c.n < 3:
        short = [f"{name} has {s.n}" for name, s in (("baseline", b), ("candidate", c)) if s.n < 3]
        note = f"fewer than three samples on a side ({', '.join(short)}) and no history of " \
               f"{MIN_HISTORY} runs; collect at least {3 - min(b.n, c.n)} more trial(s)"
    else:
        note = no_spread_note(k, hist_runs)
    if min(k, m) == 1:
        note = f"n=1: no interval ({k} vs {m} runs); {note}"
    return Assessment(b, c, delta, None, None, None, None, "none", higher, note, k_runs=k,
                      m_runs=m, runs_known=False)


def assess(base: Sequence[Sequence[float]], cand: Sequence[Sequence[float]], direction: str,
           exact: bool = False, alpha: float = 0.05, history: Sequence[float] = (),
           candidate_ids: Sequence[int] = (), threshold_pct: float = 0.0,
           baseline_ids: Sequence[int] = ()) -> Assessment:
    """Baseline runs vs candidate runs (each run a list of its trials) for one metric;
    `history`: run means of the series' history besides these runs; `candidate_ids` and
    `baseline_ids`: the runs' ids, for the reasons; `threshold_pct`: an exact metric's
    tolerance."""
    b, c = side(base), side(cand)
    higher = direction == "higher"
    k, m = len(base), len(cand)
    if exact:
        return _exact(b, c, base, cand, higher, candidate_ids, threshold_pct)
    if not b.n or not c.n or b.mean is None or c.mean is None or b.mean == 0:
        return Assessment(b, c, None, None, None, None, None, "none", higher,
                          "the baseline mean is zero" if b.mean == 0 else "a side has no sample",
                          k_runs=k, m_runs=m, runs_known=False)
    center = abs(b.mean)
    delta = 100.0 * (c.mean - b.mean) / center
    bmeans = np.array([np.mean(r) for r in base], dtype=float)
    cmeans = np.array([np.mean(r) for r in cand], dtype=float)
    hist = np.asarray(list(history), dtype=float)
    log = bool((bmeans > 0).all() and (cmeans > 0).all() and (hist > 0).all())
    yb, yc = _to_scale(bmeans, center, log), _to_scale(cmeans, center, log)
    floor = _within_floor(list(base) + list(cand), center, log)
    scale = "log run means" if log else "run means"
    yh = yardstick(_to_scale(hist, center, log), floor)
    sp = _spread(yb, yc, yh, floor, scale) if min(b.n, c.n) >= 3 or yh.runs >= MIN_HISTORY \
        else None
    if sp is None:
        return _no_test(b, c, higher, k, m, int(hist.size), delta)
    spread_from, spread_runs, sd_b, sd_c, se, df, method = sp
    d = float(yc.mean() - yb.mean())
    if se == 0:
        p = 0.0 if d != 0 else 1.0
        half2 = half1 = 0.0
    else:
        p = float(2 * stats.t.sf(abs(d) / se, df))
        half2 = float(stats.t.ppf(1 - alpha / 2, df)) * se
        half1 = float(stats.t.ppf(1 - alpha, df)) * se
    bound = _back(d - half1, log) if higher else _back(d + half1, log)
    better = _back(d + half1, log) if higher else _back(d - half1, log)
    out = _outliers(yb, yh, baseline_ids, spread_from)
    without = None
    if out:  # without them: the other baseline runs, else the history level nearest them
        drop = {i for i, _, _ in out}
        kept = [r for i, r in enumerate(base) if i not in drop]
        near = out[0][2]
        level = float(np.exp(near) if log else near * center)
        without = assess(kept or [[level]], cand, direction, False, alpha, history,
                         candidate_ids, threshold_pct,
                         [x for i, x in enumerate(baseline_ids) if i not in drop])
    return Assessment(b, c, delta, _back(d - half2, log), _back(d + half2, log), bound, p,
                      method, higher, se_pct=100.0 * se, df=df, k_runs=k, m_runs=m,
                      sd_base_pct=100.0 * sd_b, sd_cand_pct=100.0 * sd_c, runs_known=True,
                      spread_from=spread_from, spread_runs=spread_runs, better_bound_pct=better,
                      diff=d, log_scale=log, outliers=tuple(n for _, n, _ in out), without=without)


def _se_after(a: Assessment, more: int) -> float:
    """The standard error (percent) with `more` further runs on each side, the spreads held."""
    assert a.sd_base_pct is not None and a.sd_cand_pct is not None
    return math.sqrt(a.sd_base_pct ** 2 / (a.k_runs + more) + a.sd_cand_pct ** 2 / (a.m_runs + more))


def runs_to_settle(a: Assessment, threshold_pct: float, alpha: float = 0.05) -> str:
    """What would settle an inconclusive comparison, if the estimate held: the number of further
    runs per side for the bound to come within the threshold (small change) or for the bound
    nearest no change to come past the threshold (large change). Never more than MAX_MORE_RUNS:
    past that it says which bound that many runs would reach."""
    if not a.runs_known or a.sd_base_pct is None or a.delta_pct is None:
        return f"at least {max(1, 3 - a.k_runs)} more baseline run(s) (separate processes)"
    worse_by = -a.delta_pct if a.higher_is_better else a.delta_pct  # > 0: in the worse direction
    z90 = stats.norm.ppf(1 - alpha)
    if abs(a.delta_pct) <= threshold_pct:
        room = threshold_pct - worse_by  # > 0 since the change is within the threshold
        for more in range(1, MAX_MORE_RUNS + 1):
            if z90 * _se_after(a, more) <= room:
                return f"about {more} more run(s) per side would bring the bound within " \
                       f"{threshold_pct:g}% if the change stays at {a.delta_pct:+.2f}%"
        reach = a.delta_pct + (-1 if a.higher_is_better else 1) * z90 * _se_after(a, MAX_MORE_RUNS)
        return (f"even {MAX_MORE_RUNS} more runs per side would bring the bound only to "
                f"{reach:+.2f}% (threshold {threshold_pct:g}%): reduce the run-to-run noise")
    past_by = abs(a.delta_pct) - threshold_pct  # > 0: how far the estimate is past it
    for more in range(1, MAX_MORE_RUNS + 1):
        if z90 * _se_after(a, more) < past_by:
            return f"about {more} more run(s) per side would bring the bound nearest no change " \
                   f"past {threshold_pct:g}% if the change stays at {a.delta_pct:+.2f}%"
    return (f"even {MAX_MORE_RUNS} more runs per side would leave a one-sided {level_pct(alpha)} "
            f"half-width of {z90 * _se_after(a, MAX_MORE_RUNS):.2f}%, wider than the "
            f"{past_by:.2f}% the change is past the threshold: reduce the run-to-run noise")


def decide(a: Assessment, threshold_pct: float, p_adjusted: float | None,
           alpha: float = 0.05, p_past: float | None = None) -> tuple[str, str]:
    """(verdict, reason), in the order of spec/api.md: regression, improvement, pass
    (non-inferiority: the worse-side bound within the threshold), inconclusive. `alpha` is the
    level in use (alpha / looks for a sequential experiment): the test and the bounds move
    together, and the printed levels say it.

    A change is a regression (an improvement) only when its whole one-sided 1-alpha interval
    lies past the threshold: the bound nearest no change (the better-side bound of a worse
    change, the worse-side bound of a better one) is past the threshold, and the change is
    significant against no change after the correction (adjusted p < alpha). An estimate past
    the threshold whose bound is not stays inconclusive (docs/statistics.md has the error rates
    that chose this rule). `p_past`: the one-sided p-value of "past the threshold" adjusted
    over the request's family (stats/gate.py); given, a regression or improvement also needs
    it below alpha."""
    if a.exact_verdict:
        return a.exact_verdict, a.note
    if a.delta_pct is None or a.p_value is None or a.bound_pct is None:
        return INCONCLUSIVE, a.note
    two = one = level_pct(alpha)
    change = f"{a.delta_pct:+.2f}% ({two} CI {a.ci_low_pct:+.2f}% to {a.ci_high_pct:+.2f}%)"
    beyond = abs(a.delta_pct) > threshold_pct
    significant = p_adjusted is not None and p_adjusted < alpha
    near = a.bound_pct if not a.worse else a.better_bound_pct  # the bound nearest no change
    past = near is not None and abs(near) > threshold_pct and (near < 0) == (a.delta_pct < 0)
    held = p_past is not None and p_past >= alpha  # past alone, not after the family's correction
    if past and significant and not held:
        kind = REGRESSION if a.worse else IMPROVEMENT
        return kind, (f"{change}: its one-sided {one} bound nearest no change, {near:+.2f}%, is "
                      f"past the {threshold_pct:g}% threshold, and the change is significant "
                      f"against none (adjusted p={p_adjusted:.2g}, alpha {alpha:.4g})" +
                      (f"; past the threshold after the correction over the request "
                       f"(p={p_past:.2g})" if p_past is not None else ""))
    within_bound = a.bound_pct >= -threshold_pct if a.higher_is_better else a.bound_pct <= threshold_pct
    if within_bound and a.runs_known:
        return PASS, (f"{change}; the one-sided {one} bound {a.bound_pct:+.2f}% rules out a "
                        f"regression of {threshold_pct:g}%")
    settle = runs_to_settle(a, threshold_pct, alpha)
    if beyond:
        why = (f"the estimate is past the {threshold_pct:g}% threshold but its one-sided {one} "
               f"bound nearest no change, {near:+.2f}%, is not" if near is not None and
               not past else f"past the {threshold_pct:g}% threshold but not after the "
               f"correction over the request (p={p_past:.2g})" if held and p_past is not None
               else f"past the {threshold_pct:g}% threshold but not significant")
        why += f" (adjusted p={p_adjusted:.2g})" if p_adjusted is not None else " (not tested)"
    else:
        why = (f"the one-sided {one} bound {a.bound_pct:+.2f}% does not rule out a regression of "
               f"{threshold_pct:g}%")
    return INCONCLUSIVE, f"{change}: {why}; {settle}"
