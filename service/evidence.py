"""What a reader needs beside each verdict: the profiler evidence (auxiliary-stream idle gap,
step GPU time, the kernels that changed most) for that verdict's series. Read from the compare
answer as it is; the PR comment, the check summary and /compare all show this one text."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .format import md, num, pct
from .schemas import GateOut, MetricVerdict

ARROW = "→"


@dataclass
class Evidence:
    aux_gap: str | None = None
    step_gpu_time: str | None = None
    kernels: list[tuple[str, float]] = field(default_factory=list)  # (name, change us/step)
    source: str | None = None  # "runs 3 → 9 (attached traces)"

    def parts(self, markdown: bool = False) -> list[str]:
        out = []
        if self.aux_gap:
            out.append(f"aux idle gap {self.aux_gap}")
        if self.step_gpu_time:
            out.append(f"step GPU time {self.step_gpu_time}")
        if self.kernels:
            out.append("top changed kernels: " + ", ".join(
                f"{md(name, code=True) if markdown else name} {delta:+.1f} us/step"
                for name, delta in self.kernels))
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


def evidence(cmp: GateOut, m: MetricVerdict, kernels: int = 3) -> Evidence:
    ev = Evidence()
    gap = next((x for x in cmp.metrics if x.name == "aux_gap_mean_us" and x is not m
                and (x.series_id == m.series_id if m.series_id is not None
                     else x.series == m.series)), None)
    if m.name == "aux_gap_mean_us":
        gap = m
    if gap is not None and gap.baseline.mean is not None:
        ev.aux_gap = _change(gap.baseline.mean, gap.candidate.mean, "us", gap.delta_pct)
    td = getattr(cmp, "trace_diff", None)
    if not td:
        return ev
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
    ev.kernels = [(short_kernel(k["name"]), k["delta_per_step_us"])
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
        return {"hazard": "fail", "ok": "pass"}.get(self.verdict, "inconclusive")


def ordering_line(summary: Mapping[str, Any] | None, state: str = "done",
                  error: str | None = None) -> OrderingLine:
    """The ordering line of a trace set from its stored summary and analysis state (spec/metrics.md,
    Ordering check verdicts): the check's verdict where it ran, else `unknown` with what to do
    (wait for the analysis, fix the file, name the step range, name the guarded kernels)."""
    from collectors.traces.pipeline import SERVER_PRESET

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
    return OrderingLine("unknown", check, f"no kernel in the steps matched the {check} preset: "
                        "name the guarded kernels with `perfwarden analyze FILE --guard-kernels "
                        "REGEX` (the kernel table lists the names)", 0)
