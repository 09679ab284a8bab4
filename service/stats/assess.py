"""One metric of one series: baseline runs vs candidate runs -> change, interval, p-value, verdict.

Runs are the statistical unit with trials nested in them (README, "How the gate decides"):

- baseline with >= 3 runs: run-level test. Each run is summarized by its mean; the spread of
  baseline run means is the noise (floored by the within-run trial noise, so three lucky runs
  cannot make the gate overconfident). One candidate run is judged against a prediction interval
  (t with k-1 df, sd * sqrt(1 + 1/k)); several candidate runs with Welch's t-test on run means.
- baseline with 1-2 runs: run-to-run spread is unknown; Welch's t-test on the trials, said so
  in the reason.
- fewer than 3 samples on a side: inconclusive.
- exact metrics (KV capacity): compared exactly, no statistics.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

Z_POWER = 0.8416  # one-sided z for 80% power


@dataclass
class Assessment:
    baseline: dict
    candidate: dict
    delta_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None
    method: str
    reason: str  # filled in finally by `decide`
    worse: bool | None = None
    exact_verdict: str | None = None
    need_more: str | None = None
    se_pct: float | None = None
    df: float | None = None


def side(runs: list[list[float]]) -> dict:
    vals = [v for r in runs for v in r]
    if not vals:
        return {"runs": 0, "n": 0, "mean": None, "median": None, "stdev": None}
    a = np.asarray(vals)
    return {"runs": len(runs), "n": int(a.size), "mean": float(a.mean()),
            "median": float(np.median(a)), "stdev": float(a.std(ddof=1)) if a.size > 1 else None}


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.4g}"


def assess(base: list[list[float]], cand: list[list[float]], direction: str, exact: bool,
           alpha: float = 0.05, threshold_pct: float = 0.5) -> Assessment:
    b, c = side(base), side(cand)
    higher = direction == "higher"
    if exact:
        bv = min(v for r in base for v in r) if higher else max(v for r in base for v in r)
        cv = min(v for r in cand for v in r) if higher else max(v for r in cand for v in r)
        delta = 100.0 * (cv - bv) / bv if bv else None
        if cv == bv:
            verdict, reason = "pass", f"unchanged at {_fmt(bv)}"
        elif (cv < bv) == higher:
            verdict, reason = "regression", f"{'dropped' if higher else 'rose'} from {_fmt(bv)} to " \
                                             f"{_fmt(cv)} ({cv - bv:+,.0f})"
        else:
            verdict, reason = "improvement", f"{'rose' if higher else 'dropped'} from {_fmt(bv)} " \
                                              f"to {_fmt(cv)} ({cv - bv:+,.0f})"
        return Assessment(b, c, delta, delta, delta, None, "exact", reason,
                          worse=verdict == "regression", exact_verdict=verdict)
    if b["n"] < 3 or c["n"] < 3:
        short = [f"{name} has {s['n']}" for name, s in (("baseline", b), ("candidate", c))
                 if s["n"] < 3]
        return Assessment(b, c, _delta(b, c), None, None, None, "none",
                          f"fewer than three samples on a side ({', '.join(short)}); "
                          f"collect at least {3 - min(b['n'], c['n'])} more trial(s)")
    delta = _delta(b, c)
    if delta is None:
        return Assessment(b, c, None, None, None, None, "none", "baseline median is zero")
    base_center = b["median"]
    k, m = len(base), len(cand)
    bmeans = np.array([np.mean(r) for r in base])
    cmeans = np.array([np.mean(r) for r in cand])
    if k >= 3:
        within = [np.var(r, ddof=1) / len(r) for r in base + cand if len(r) > 1]
        s_runs = float(bmeans.std(ddof=1))
        s_floor = math.sqrt(float(np.mean(within))) if within else 0.0
        s_b = max(s_runs, s_floor)
        diff = float(cmeans.mean() - bmeans.mean())
        if m == 1:
            se = s_b * math.sqrt(1 + 1 / k)
            df = k - 1
            method = f"prediction interval from {k} baseline runs (t, {df} df)"
        else:
            s_c = max(float(cmeans.std(ddof=1)), s_floor)
            vb, vc = s_b ** 2 / k, s_c ** 2 / m
            se = math.sqrt(vb + vc)
            df = (vb + vc) ** 2 / ((vb ** 2 / (k - 1)) + (vc ** 2 / (m - 1))) if vb + vc > 0 else k + m - 2
            method = f"Welch t-test on run means ({k} vs {m} runs)"
    else:
        ba = np.array([v for r in base for v in r])
        ca = np.array([v for r in cand for v in r])
        vb, vc = ba.var(ddof=1) / ba.size, ca.var(ddof=1) / ca.size
        se = math.sqrt(vb + vc)
        df = (vb + vc) ** 2 / ((vb ** 2 / (ba.size - 1)) + (vc ** 2 / (ca.size - 1))) if vb + vc > 0 \
            else ba.size + ca.size - 2
        diff = float(ca.mean() - ba.mean())
        method = (f"Welch t-test on trials (baseline has {k} run{'s' if k > 1 else ''}: "
                  "run-to-run spread unknown)")
    if se == 0:
        p = 0.0 if diff != 0 else 1.0
        half = 0.0
    else:
        p = float(2 * stats.t.sf(abs(diff) / se, df))
        half = float(stats.t.ppf(1 - alpha / 2, df) * se)
    half_pct = 100.0 * half / abs(base_center)
    a = Assessment(b, c, delta, delta - half_pct, delta + half_pct, p, method, "",
                   worse=(delta < 0) if higher else (delta > 0))
    a.se_pct = 100.0 * se / abs(base_center)
    a.df = df
    # how much more data would resolve a change of the threshold's size
    if threshold_pct > 0 and a.se_pct > 0:
        if k >= 3:
            sd_pct = a.se_pct / math.sqrt(1 + 1 / k) if m == 1 else a.se_pct * math.sqrt(k * m / (k + m))
            z = stats.norm.ppf(1 - alpha / 2) + Z_POWER
            need = math.ceil((z * sd_pct * math.sqrt(2) / threshold_pct) ** 2)
            a.need_more = f"about {max(1, need - min(k, m))} more run(s) per side"
        else:
            a.need_more = f"at least {3 - k} more baseline run(s) (separate processes)"
    return a


def _delta(b: dict, c: dict) -> float | None:
    if b["median"] in (None, 0) or c["median"] is None:
        return None
    return 100.0 * (c["median"] - b["median"]) / b["median"]


def decide(a: Assessment, threshold_pct: float, p_adj: float | None, alpha: float) -> tuple[str, str]:
    if a.exact_verdict:
        return a.exact_verdict, a.reason
    if a.delta_pct is None or a.p_value is None:
        return "inconclusive", a.reason
    beyond = abs(a.delta_pct) > threshold_pct
    sig = p_adj is not None and p_adj < alpha
    change = f"{a.delta_pct:+.2f}% (95% CI {a.ci_low_pct:+.2f}% to {a.ci_high_pct:+.2f}%)"
    if not beyond:
        wide = max(abs(a.ci_low_pct), abs(a.ci_high_pct)) > threshold_pct  # type: ignore[arg-type]
        return "pass", (f"{change} is within the {threshold_pct:g}% threshold"
                        + (f"; the interval reaches past it ({a.need_more} would sharpen it)"
                           if wide and a.need_more else ""))
    if sig:
        kind = "regression" if a.worse else "improvement"
        return kind, f"{change} is past the {threshold_pct:g}% threshold and significant " \
                     f"(adjusted p={p_adj:.2g})"
    return "inconclusive", (f"{change} is past the {threshold_pct:g}% threshold but not significant "
                            f"(adjusted p={p_adj:.2g}); {a.need_more or 'more runs'} would settle it")
