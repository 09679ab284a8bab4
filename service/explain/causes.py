"""Why, not only what (spec/api.md, Trace evidence and Cause): the profiler evidence of each
series across its runs with traces, and one cause for a verdict that did not pass, decided from
what was measured, in this order: configuration (config keys differ between the sides, or the
series does not know which server it measured: its `unknown` identity keys),
environment (GPU, driver, torch/CUDA/NCCL versions, SM clocks or throttle reasons differ), code
(a kernel or lane figure changed significantly and materially, or, with none, a change beyond
what the baseline's runs can detect: the noise card of stats/history.noise), else noise."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from statistics import median
from typing import TYPE_CHECKING, Any

from collectors.traces.diff import run_kernels
from collectors.traces.summary import valid as valid_summary

from ..format import num, pct, settle_unknown, unknown_keys
from ..gate.schemas import Cause, FigureChange, TraceEvidence
from ..runs.unknown import ORDER
from ..stats import history as hstats
from ..stats.gate import Judgement, MetricResult
from ..stats.traces import CORRECTION_NAME, LANES, MATERIAL_PCT, Change, RunTrace, trace_changes

if TYPE_CHECKING:
    from ..runs.tables import Run

ENV_KEYS = (("hardware", "gpu"), ("hardware", "driver"), ("environment", "torch"),
            ("environment", "cuda"), ("environment", "nccl"))
CLOCK_SHIFT_PCT = 2.0  # median SM clocks further apart than this differ


def run_trace(run: Run) -> RunTrace | None:
    """A run's trace figures, read from its stored summary as a reader may show it (a malformed
    field is left out, never a failed answer)."""
    s = valid_summary(run.trace_summary)[0]
    if not s or not s.get("steps"):
        return None
    try:
        kernels, names, whole = run_kernels(s)
    except (KeyError, TypeError, ValueError, AttributeError):  # rows missing what is read
        return None
    return RunTrace(run.id, kernels, names, whole, {k: s.get(k) for k, _ in LANES})


def _out(c: Change) -> FigureChange:
    return FigureChange(key=c.key, name=c.name, base_us=c.base_us, candidate_us=c.cand_us,
                        delta_us=c.delta_us, ci_low_us=c.ci_low_us, ci_high_us=c.ci_high_us,
                        p_value=c.p_value, p_adjusted=c.p_adjusted, significant=c.significant,
                        material=c.material, status=c.status)


def trace_evidence(j: Judgement, runs: Mapping[int, Run], alpha: float) -> list[TraceEvidence]:
    """One entry per series of the answer that has runs with traces on both sides."""
    groups: dict[Any, tuple[MetricResult, set[int], set[int]]] = {}
    for r in j.metrics:
        c = r.comparison
        key = c.series_id if c.series_id is not None else repr(sorted(c.series.items()))
        g = groups.setdefault(key, (r, set(), set()))
        g[1].update(c.baseline_ids)
        g[2].update(c.candidate_ids)
    out = []
    for r, bids, cids in groups.values():
        base = [t for t in (run_trace(runs[i]) for i in sorted(bids) if i in runs) if t]
        cand = [t for t in (run_trace(runs[i]) for i in sorted(cids) if i in runs) if t]
        if not base or not cand:
            continue
        tc = trace_changes(base, cand, alpha)
        out.append(TraceEvidence(
            series=r.comparison.series, series_id=r.comparison.series_id,
            baseline_run_ids=tc.base_runs, candidate_run_ids=tc.cand_runs,
            step_gpu_time_us=tc.step_us, tested_kernels=len(tc.kernels),
            untested_kernels=tc.untested, note=tc.note,
            correction=f"{CORRECTION_NAME} over the {len(tc.kernels)} kernels that could "
                       f"change materially (at least {MATERIAL_PCT:g}% of the baseline's step "
                       f"GPU time; {tc.small} smaller ones not tested) at alpha {alpha:g}",
            kernels=[_out(c) for c in tc.evidence], lanes=[_out(c) for c in tc.lanes]))
    return out


def _values(runs: Sequence[Run], get: Callable[[Run], Any]) -> set[str]:
    return {str(v) for v in (get(r) for r in runs) if v is not None}


def _differs(base: Sequence[Run], cand: Sequence[Run], get: Callable[[Run], Any]
             ) -> tuple[set[str], set[str]] | None:
    b, c = _values(base, get), _values(cand, get)
    return (b, c) if b and c and b != c else None


def _both(b: set[str], c: set[str]) -> str:
    return f"{'/'.join(sorted(b))} → {'/'.join(sorted(c))}"


def _trial_gpu(run: Run, key: str) -> list[Any]:
    return [t["gpu"][key] for t in (run.extra or {}).get("trials") or []
            if isinstance(t, dict) and isinstance(t.get("gpu"), dict) and t["gpu"].get(key)
            is not None]


def _getter(part: str, key: str) -> Callable[[Run], Any]:
    """A run's `part` (config, hardware, environment) at `key`."""
    return lambda r: (getattr(r, part) or {}).get(key)


def configuration(base: Sequence[Run], cand: Sequence[Run], vary: Sequence[str]) -> list[str]:
    keys = sorted({k for r in list(base) + list(cand) for k in r.config} - set(vary))
    out = []
    for k in keys:
        d = _differs(base, cand, _getter("config", k))
        if d:
            out.append(f"{k} {_both(*d)}")
    return out


def environment(base: Sequence[Run], cand: Sequence[Run]) -> list[str]:
    out = []
    for part, key in ENV_KEYS:
        d = _differs(base, cand, _getter(part, key))
        if d:
            out.append(f"{key} {_both(*d)}")
    clocks = [[float(v) for r in side for v in _trial_gpu(r, "sm_clock_mhz")]
              for side in (base, cand)]
    if all(clocks):
        mb, mc = median(clocks[0]), median(clocks[1])
        if mb and abs(mc - mb) / mb * 100 > CLOCK_SHIFT_PCT:
            out.append(f"median SM clock {mb:,.0f} → {mc:,.0f} MHz")
    throttled = [any(str(v).strip("0x") for r in side for v in _trial_gpu(r, "throttle_reasons"))
                 for side in (base, cand)]
    if throttled[0] != throttled[1]:
        out.append("throttle reasons active on the " + ("candidate" if throttled[1] else
                                                        "baseline") + " side only")
    return out


def _interval(c: FigureChange) -> str:
    if c.ci_low_us is None or c.ci_high_us is None:
        return f" ({c.status})" if c.status != "changed" else ""
    return f" (CI {c.ci_low_us:+.1f} to {c.ci_high_us:+.1f})"


def code(evidence: Sequence[TraceEvidence]) -> list[str]:
    out = []
    for e in evidence:
        for c in e.kernels[:3]:
            out.append(f"{c.name[:60]} {c.delta_us:+.1f} us/step{_interval(c)}")
        for c in e.lanes:
            if c.significant and c.material:
                out.append(f"{c.name} {c.delta_us:+.1f} us{_interval(c)}")
    return out


def noise_card(m: MetricResult) -> hstats.Noise:
    """The series' noise card as the decisive metric's baseline runs give it (stats/history)."""
    return hstats.noise([hstats.RunFigure(len(r), sum(r) / len(r), None)
                         for r in m.comparison.baseline if r])


def _beyond_noise(m: MetricResult) -> tuple[bool, str]:
    """Is the decisive metric's change beyond its noise card, and the words that say so."""
    a = m.assessment
    change = f"{m.comparison.metric} {pct(a.delta_pct) if a else 'unmeasured'}"
    if a and a.ci_low_pct is not None:
        change += f" (CI {pct(a.ci_low_pct)} to {pct(a.ci_high_pct)})"
    card = noise_card(m)
    if card.min_detectable_pct is None or a is None or a.delta_pct is None:
        return False, f"{change}; {m.reason}"
    beyond = abs(a.delta_pct) > card.min_detectable_pct
    return beyond, (f"{change}, {'beyond' if beyond else 'within'} the noise of the baseline's "
                    f"{card.runs} runs (run-to-run CV {num(card.run_to_run_cv_pct, 1)}%, "
                    f"smallest detectable change {num(card.min_detectable_pct, 1)}%)")


def cause(j: Judgement, runs: Mapping[int, Run], evidence: Sequence[TraceEvidence],
          vary: Sequence[str]) -> Cause | None:
    if j.verdict == "pass":
        return None
    held = [r for r in j.metrics if r.comparison.role == "gate" and r.verdict != "pass"] \
        or list(j.metrics)
    bids = sorted({i for r in held for i in r.comparison.baseline_ids})
    cids = sorted({i for r in held for i in r.comparison.candidate_ids})
    base = [runs[i] for i in bids if i in runs]
    cand = [runs[i] for i in cids if i in runs]
    found = code(evidence)
    also = f" (traces: {'; '.join(found)})" if found else ""
    conf = configuration(base, cand, vary)
    if conf:
        return Cause(kind="configuration",
                     line=f"configuration: config differs between the sides: {', '.join(conf)}"
                          + also)
    env = environment(base, cand)
    if env:
        return Cause(kind="environment",
                     line=f"environment: {', '.join(env)} between the sides" + also)
    unknown = {k for r in held for k in unknown_keys(r.comparison.series)} - set(vary)
    lacking = sorted(unknown, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k))
    if lacking:  # nothing says the two sides ran one server
        said = ", ".join(lacking[:-1]) + " and " + lacking[-1] if len(lacking) > 1 else lacking[0]
        return Cause(kind="configuration",
                     line=f"configuration: {said} unknown: the runs may be of "
                          f"different servers ({settle_unknown(lacking)})" + also)
    if found:
        return Cause(kind="code", line="code: significant, material changes in the traces: "
                                       + "; ".join(found))
    if not held:
        return Cause(kind="noise", line="noise: nothing was judged")
    beyond, words = _beyond_noise(held[0])
    tested = [e for e in evidence if not e.note]
    inside = ("no kernel or lane figure of the traces changed significantly and materially"
              if tested else f"the traces' figures untested ({evidence[0].note})" if evidence
              else "no runs with traces to look inside")
    if beyond:
        return Cause(kind="code", line=f"code: config and environment match and {words}; "
                                       f"{inside}")
    return Cause(kind="noise", line=f"noise: config and environment match; {words}; {inside}")
