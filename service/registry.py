"""The metric registry of spec/metrics.md: unit, direction and default gate threshold."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    name: str
    unit: str
    direction: str  # "higher" or "lower" is better
    threshold_pct: float
    exact: bool = False  # compared exactly: any drop is a regression
    gated: bool = True


_BUILTIN = [
    MetricSpec("tok_s", "tok/s", "higher", 0.5),
    MetricSpec("total_tok_s", "tok/s", "higher", 0.5),
    MetricSpec("req_s", "req/s", "higher", 0.5),
    MetricSpec("latency_s", "s", "lower", 1.0),
    MetricSpec("aux_gap_mean_us", "us", "lower", 10.0),
    MetricSpec("aux_gap_median_us", "us", "lower", 10.0),
    MetricSpec("aux_gap_p95_us", "us", "lower", 10.0),
    MetricSpec("aux_idle_per_step_us", "us", "lower", 10.0),
    MetricSpec("kv_capacity_tokens", "tokens", "higher", 0.0, exact=True),
    MetricSpec("kv_max_concurrency", "x", "higher", 0.0, exact=True),
    MetricSpec("aux_busy_per_step_us", "us", "lower", 10.0, gated=False),
    MetricSpec("aux_main_overlap_us_per_step", "us", "higher", 10.0, gated=False),
]
BUILTIN = {m.name: m for m in _BUILTIN}
_LATENCY = re.compile(r"^(ttft|tpot|itl|e2el)_ms_(mean|median|p99)$")
UNKNOWN_THRESHOLD_PCT = 1.0


def builtin(name: str) -> MetricSpec | None:
    if name in BUILTIN:
        return BUILTIN[name]
    if _LATENCY.match(name):
        return MetricSpec(name, "ms", "lower", 1.0)
    return None


def all_builtin() -> list[MetricSpec]:
    extra = [MetricSpec(f"{p}_ms_{s}", "ms", "lower", 1.0) for p in ("ttft", "tpot", "itl", "e2el")
             for s in ("mean", "median", "p99")]
    return _BUILTIN + extra
