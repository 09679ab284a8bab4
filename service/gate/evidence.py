"""What a reader needs beside each verdict: the profiler evidence (auxiliary-stream idle gap,
step GPU time, the kernels that changed most) for that verdict's series. Read from the compare
answer as it is; the PR comment, the check summary and /compare all show this one text."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.traces.pipeline import SERVER_PRESET
from collectors.verdicts import FAIL, INCONCLUSIVE, PASS

from ..format import md, num, pct
from .schemas import GateOut, MetricVerdict, TraceEvidence

ARROW = "→"


@dataclass
class Evidence:
    aux_gap: str | None = None
    step_gpu_time: str | None = None
    # (name, change us/step, interval low, high): across runs, only the significant and
    # material ones (intervals set); from one trace a side, the largest (intervals None)
    kernels: list[tuple[str, float, float | None, float | None]] = field(default_factory=list)
    kernels_note: str | None = None  # what the kernel test found or why there was none
    source: str | None = None  # "traces of runs 3, 4, 5 → 9, 10, 11"

    def parts(self, markdown: bool = False) -> list[str]:
        out = []
        if self.aux_gap:
            out.append(f"aux idle gap {self.aux_gap}")
        if self.step_gpu_time:
            out.append(f"step GPU time {self.step_gpu_time}")
        if self.kernels:
            tested = self.kernels[0][2] is not None
            out.append(("kernels changed significantly: " if tested else
                        "top changed kernels: ") + ", ".join(
                f"{md(name, code=True) if markdown else name} {delta:+.1f} us/step"
                + (f" (CI {lo:+.1f} to {hi:+.1f})" if lo is not None and hi is not None else "")
                for name, delta, lo, hi in self.kernels))
        if self.kernels_note:
            out.append(self.kernels_note)
        return out

    def __bool__(self) -> bool:
        return bool(self.parts())

    def text(self, code: str = "`") -> str:
        """One line; kernel names as Markdown inline code where `code` is a backtick (escaped:
        a name is data), else plain (HTML escapes them itself)."""
        line = "; ".join(self.parts(markdown=code == "`"))
        return line + (f" ({self.source})" if self.source and line else "")


def _change(base: float | None, cand: float | None, unit: str, delta_pct: float | None) -> str:
    change = f" ({pct(delta_pct)})" if delta_pct is not None else ""
    return f"{num(base, 1)} {unit} {ARROW} {num(cand, 1)} {unit}{change}"


def _matches(series: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Does a run of `config` belong to the (candidate side of the) series?"""
    for k, v in series.items():
        if k in ("gpu", "gpu_count"):
            continue
        if isinstance(v, Mapping) and set(v) == {"baseline", "candidate"}:
            v = v["candidate"]
        if k in config and config[k] != v:
            return False
    return True


def short_kernel(name: str, limit: int = 48) -> str:
    """A kernel's name without its return type, template and call arguments
    (`void at::native::reduce_kernel<(int)128, ...>(...)` -> `at::native::reduce_kernel`)."""
    short = name.removeprefix("void ").strip()
    cut = min((i for i in (short.find("<"), short.find("(")) if i > 0), default=len(short))
    short = short[:cut]
    return short if len(short) <= limit else "..." + short[-(limit - 3):]


def _series_evidence(cmp: GateOut, m: MetricVerdict) -> TraceEvidence | None:
    return next((e for e in cmp.trace_evidence if (e.series_id == m.series_id
                 if m.series_id is not None else e.series == m.series)), None)


def _lane(e: TraceEvidence, key: str) -> str | None:
    c = next((x for x in e.lanes if x.key == key), None)
    if c is None:
        return None
    ci = (f", CI {c.ci_low_us:+.1f} to {c.ci_high_us:+.1f} us"
          if c.ci_low_us is not None and c.ci_high_us is not None else "")
    what = "significant" if c.significant else "not significant"
    return f"{num(c.base_us, 1)} us {ARROW} {num(c.candidate_us, 1)} us ({what}{ci})"


def _across_runs(ev: Evidence, e: TraceEvidence, kernels: int) -> Evidence:
    """The evidence of a series' runs with traces: every figure tested across them."""
    runs = (f"traces of runs {', '.join(map(str, e.baseline_run_ids))} {ARROW} "
            f"{', '.join(map(str, e.candidate_run_ids))}")
    ev.aux_gap = _lane(e, "aux_gap_mean_us") or ev.aux_gap
    ev.step_gpu_time = _lane(e, "step_gpu_time_us_mean")
    ev.kernels = [(short_kernel(k.name), k.delta_us, k.ci_low_us, k.ci_high_us)
                  for k in e.kernels[:kernels]]
    if not e.kernels:
        ev.kernels_note = (f"no kernel changed significantly and materially "
                           f"({e.tested_kernels} tested)")
    ev.source = f"{runs}; {e.correction}"
    return ev


def evidence(cmp: GateOut, m: MetricVerdict, kernels: int = 3) -> Evidence:
    ev = Evidence()
    gap = next((x for x in cmp.metrics if x.name == "aux_gap_mean_us" and x is not m
                and (x.series_id == m.series_id if m.series_id is not None
                     else x.series == m.series)), None)
    if m.name == "aux_gap_mean_us":
        gap = m
    if gap is not None and gap.baseline.mean is not None:
        ev.aux_gap = _change(gap.baseline.mean, gap.candidate.mean, "us", gap.delta_pct)
    across = _series_evidence(cmp, m)
    if across is not None and not across.note:
        return _across_runs(ev, across, kernels)
    td = getattr(cmp, "trace_diff", None)
    if not td:
        return ev
    if across is not None:
        ev.kernels_note = f"untested: {across.note}"
    cand = next((r for r in getattr(cmp, "candidate_runs", [])
                 if r.id == td.get("candidate_run_id")), None)
    if cand is None or not _matches(m.series, cand.config):
        return ev
    gaps = {g["metric"]: g for g in td.get("gaps", [])}
    if ev.aux_gap is None and gaps.get("aux_gap_mean_us"):
        g = gaps["aux_gap_mean_us"]
        ev.aux_gap = _change(g["base"], g["candidate"], "us", g["delta_pct"])
    g = gaps.get("step_gpu_time_us_mean")
    if g:
        ev.step_gpu_time = _change(g["base"], g["candidate"], "us", g["delta_pct"])
    ev.kernels = [(short_kernel(k["name"]), k["delta_per_step_us"], None, None)
                  for k in td.get("kernels", [])[:kernels] if k["delta_per_step_us"]]
    ev.source = f"traces of run {td.get('base_run_id')} {ARROW} run {td.get('candidate_run_id')}"
    return ev


def last_of_series(metrics: list[MetricVerdict], i: int) -> bool:
    """Is verdict `i` the last of its series' run of rows (where that series' evidence goes)?"""
    return i == len(metrics) - 1 or metrics[i + 1].series != metrics[i].series


@dataclass(frozen=True)
class OrderingLine:
    """The ordering check of one trace set as a reader sees it: its verdict (`ok`, `hazard` or
    `unknown`), the check's name (the preset or "guarded kernels") and one line of why; for
    `unknown`, the one thing to do to get an answer."""

    verdict: str
    check: str
    reason: str
    guarded: int | None = None

    @property
    def css(self) -> str:
        return {"hazard": FAIL, "ok": PASS}.get(self.verdict, INCONCLUSIVE)


def ordering_line(summary: Mapping[str, Any] | None, state: str = "done",
                  error: str | None = None) -> OrderingLine:
    """The ordering line of a trace set from its stored summary and analysis state (spec/metrics.md,
    Ordering check verdicts): the check's verdict where it ran, else `unknown` with what to do
    (wait for the analysis, fix the file, name the step range, name the guarded kernels)."""

    o = (summary or {}).get("ordering") or {}
    if o.get("verdict"):
        return OrderingLine(o["verdict"], o.get("preset") or "guarded kernels",
                            o.get("reason") or "", o.get("guarded_kernels"))
    check = SERVER_PRESET
    if state == "pending":
        return OrderingLine("unknown", check, "the trace is still being analyzed: reload this "
                            "page once its analysis is done")
    if state == "failed":
        return OrderingLine("unknown", check, f"the analysis failed ({error or 'no reason'}): "
                            "upload a trace the analysis can read")
    if not summary or not summary.get("steps"):
        return OrderingLine("unknown", check, "no decode steps found: name the step range with "
                            "`perfwarden analyze FILE --step-regex REGEX`")
    return OrderingLine("unknown", check, f"no kernel in the steps matched the {check} preset "
                        "and no routed-expert range held one: name the guarded kernels with "
                        "`perfwarden analyze FILE --guard-kernels REGEX` (the kernel table lists "
                        "the names) or their NVTX range with `--guard-range REGEX`", 0)
