"""The profiler evidence across runs (spec/api.md, Trace evidence): each kernel's time per step,
the aux idle gap and the step GPU time, run by run, judged as the gate judges a metric. Pure:
numbers in, dataclasses out.

Each run with a trace gives one value per figure (its stored summary: no pass over the trace).
A figure's change is the gate's estimator (assess: the relative difference of the means of run
means, its interval from one t statistic on log run means), turned into microseconds per step
by the baseline's mean. A change is listed as evidence only when it is significant after
correction AND material: at least MATERIAL_PCT of the baseline's step GPU time. A kernel whose
time per step stays below that on both sides cannot change materially: it is not tested, and
the family corrected together is the kernels that can (Benjamini-Hochberg, the gate's
correction, through statsmodels' multipletests); the lane figures are a family of their own. A
kernel in no baseline run but in every candidate run (or the reverse) is new (gone): material by
the same rule, with no interval.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from statsmodels.stats.multitest import multipletests

from .assess import MIN_BASELINE_RUNS, assess

MATERIAL_PCT = 1.0  # share of the baseline's step GPU time a change must reach to be material
CORRECTION = "fdr_bh"
CORRECTION_NAME = "Benjamini-Hochberg"
LANES = (("aux_idle_per_step_us", "aux idle per step"), ("aux_gap_mean_us", "aux idle gap"),
         ("step_gpu_time_us_mean", "step GPU time"))


@dataclass(frozen=True)
class RunTrace:
    """One run's figures from its stored trace summary."""

    run_id: int
    kernels: dict[str, float]  # kernel key -> us per step
    names: dict[str, str]  # kernel key -> a name as the trace wrote it
    whole: bool  # the kernel list was not cut at its limit
    lanes: dict[str, float | None]  # LANES' keys -> value


@dataclass(frozen=True)
class Change:
    """One figure's change, baseline -> candidate, in us per step (a lane: in its unit)."""

    key: str
    name: str
    base_us: float
    cand_us: float
    delta_us: float
    ci_low_us: float | None
    ci_high_us: float | None
    p_value: float | None
    p_adjusted: float | None
    significant: bool
    material: bool
    status: str  # "changed", "new", "gone"

    @property
    def evidence(self) -> bool:
        return self.significant and self.material


@dataclass(frozen=True)
class TraceChanges:
    base_runs: list[int]
    cand_runs: list[int]
    step_us: float | None  # the baseline's step GPU time (mean of runs): what material is of
    kernels: list[Change] = field(default_factory=list)  # tested ones, largest change first
    lanes: list[Change] = field(default_factory=list)
    untested: int = 0  # kernels that a cut kernel list leaves unknown in some run
    small: int = 0  # kernels below the material share on both sides: not tested
    note: str = ""  # why there is no test

    @property
    def tested(self) -> bool:
        return not self.note

    @property
    def evidence(self) -> list[Change]:
        return [c for c in self.kernels if c.evidence]


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _one(key: str, name: str, base: list[float], cand: list[float], alpha: float,
         step_us: float | None) -> tuple[Change, float | None]:
    b, c = _mean(base), _mean(cand)
    delta = c - b
    material = step_us is not None and abs(delta) >= MATERIAL_PCT / 100.0 * step_us
    if b == 0 or c == 0:
        status = "new" if b == 0 and all(v > 0 for v in cand) else (
            "gone" if c == 0 and all(v > 0 for v in base) else "changed")
        sure = status != "changed"
        return Change(key, name, b, c, delta, None, None, None, None, sure, material and sure,
                      status), None
    a = assess([[v] for v in base], [[v] for v in cand], "lower", alpha=alpha)
    lo = None if a.ci_low_pct is None else b * a.ci_low_pct / 100.0
    hi = None if a.ci_high_pct is None else b * a.ci_high_pct / 100.0
    return Change(key, name, b, c, delta, lo, hi, a.p_value, None, False, material,
                  "changed"), a.p_value


def _corrected(changes: list[tuple[Change, float | None]], alpha: float) -> list[Change]:
    tested = [i for i, (_, p) in enumerate(changes) if p is not None]
    out = [c for c, _ in changes]
    if tested:
        reject, adj, _, _ = multipletests([changes[i][1] for i in tested], alpha=alpha,
                                          method=CORRECTION)
        for i, r, pa in zip(tested, reject, adj):
            c = out[i]
            out[i] = Change(c.key, c.name, c.base_us, c.cand_us, c.delta_us, c.ci_low_us,
                            c.ci_high_us, c.p_value, float(pa), bool(r), c.material, c.status)
    return sorted(out, key=lambda c: -abs(c.delta_us))


def trace_changes(base: Sequence[RunTrace], cand: Sequence[RunTrace], alpha: float = 0.05
                  ) -> TraceChanges:
    """The runs with traces of each side, judged figure by figure."""
    bids, cids = [r.run_id for r in base], [r.run_id for r in cand]
    steps = [r.lanes.get("step_gpu_time_us_mean") for r in base]
    step_us = _mean([s for s in steps if s is not None]) if any(s is not None for s in steps) \
        else None
    if len(base) < MIN_BASELINE_RUNS or len(cand) < MIN_BASELINE_RUNS:
        return TraceChanges(bids, cids, step_us, note=(
            f"{len(base)} baseline and {len(cand)} candidate run(s) with a trace: an interval "
            f"needs {MIN_BASELINE_RUNS} a side"))
    runs = list(base) + list(cand)
    keys = sorted({k for r in runs for k in r.kernels})
    judged, untested, small = [], 0, 0
    for k in keys:
        if any(k not in r.kernels and not r.whole for r in runs):
            untested += 1
            continue
        bv, cv = [r.kernels.get(k, 0.0) for r in base], [r.kernels.get(k, 0.0) for r in cand]
        if step_us is not None and max(_mean(bv), _mean(cv)) < MATERIAL_PCT / 100.0 * step_us:
            small += 1
            continue
        judged.append(_one(k, next(r.names[k] for r in runs if k in r.names), bv, cv, alpha,
                           step_us))
    lanes = []
    for key, label in LANES:
        lb = [v for v in (r.lanes.get(key) for r in base) if v is not None]
        lc = [v for v in (r.lanes.get(key) for r in cand) if v is not None]
        if len(lb) == len(base) and len(lc) == len(cand):
            lanes.append(_one(key, label, lb, lc, alpha, step_us))
    return TraceChanges(bids, cids, step_us, _corrected(judged, alpha),
                        _corrected(lanes, alpha), untested, small=small)
