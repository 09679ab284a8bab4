"""THE metric registry (spec/metrics.md, "Metric registry"): name, unit, direction, threshold,
role (spec/api.md, Gating and evidence metrics: `gate` metrics decide the verdict, `evidence`
metrics, every
trace-derived figure, are reported beside them and never change it), and the metrics alerts
watch when not told (`watched`).

Standard library only. The collectors (record building, engine readers, the decode benchmark,
trace summaries), the service (ingest checks, the gate, history), and the migrations' seed rows
all read this module, so a metric's direction can never differ between the collector that writes
a record and the service that judges it.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

HIGHER, LOWER = "higher", "lower"
GATE, EVIDENCE = "gate", "evidence"
UNKNOWN_THRESHOLD_PCT = 1.0  # unknown metrics: a direction is required, 1% threshold


@dataclass(frozen=True)
class MetricSpec:
    name: str
    unit: str
    direction: str  # "higher" or "lower" is better
    threshold_pct: float
    exact: bool = False  # compared exactly: any change in the worse direction is a regression
    role: str = GATE  # GATE decides the verdict; EVIDENCE is reported beside it

    @property
    def gated(self) -> bool:
        return self.role == GATE

    def row(self) -> dict:
        """The metric_registry table row (migrations seed these; the table keeps `gated`)."""
        d = asdict(self)
        d["gated"] = d.pop("role") == GATE
        return {**d, "builtin": True}


_LATENCY_PREFIXES = ("ttft", "tpot", "itl", "e2el")
_LATENCY_STATS = ("mean", "median", "p99")
_LATENCY = re.compile(rf"^({'|'.join(_LATENCY_PREFIXES)})_ms_(mean|median|std|p\d{{1,2}}(?:\.\d+)?)$")

_FIXED = (
    MetricSpec("tok_s", "tok/s", HIGHER, 0.5),
    MetricSpec("total_tok_s", "tok/s", HIGHER, 0.5),
    MetricSpec("req_s", "req/s", HIGHER, 0.5),
    # the CPU decode benchmark: tokens per CPU-second of the rank, which other processes on a
    # shared machine do not move the way they move wall-clock tok/s
    MetricSpec("cpu_tok_s", "tok/s", HIGHER, 5.0),
    MetricSpec("latency_s", "s", LOWER, 1.0),
    # exact, within the allocator's granularity: one code on two leases differs by 0.05%
    MetricSpec("kv_capacity_tokens", "tokens", HIGHER, 0.1, exact=True),
    MetricSpec("kv_max_concurrency", "x", HIGHER, 0.1, exact=True),
    # a serve benchmark's requests: one more failed request is a regression, whatever the speed;
    # the completed count follows the prompts sent, so it explains and never decides
    MetricSpec("failed_requests", "requests", LOWER, 0.0, exact=True),
    MetricSpec("completed_requests", "requests", HIGHER, 0.0, exact=True, role=EVIDENCE),
    # trace-derived: evidence (one profiled run a side is common; it explains, never decides)
    MetricSpec("aux_gap_mean_us", "us", LOWER, 10.0, role=EVIDENCE),
    MetricSpec("aux_gap_median_us", "us", LOWER, 10.0, role=EVIDENCE),
    MetricSpec("aux_gap_p95_us", "us", LOWER, 10.0, role=EVIDENCE),
    MetricSpec("aux_idle_per_step_us", "us", LOWER, 10.0, role=EVIDENCE),
    MetricSpec("aux_busy_per_step_us", "us", LOWER, 10.0, role=EVIDENCE),
    MetricSpec("aux_main_overlap_us_per_step", "us", HIGHER, 10.0, role=EVIDENCE),
)
FIXED: dict[str, MetricSpec] = {m.name: m for m in _FIXED}


_EVIDENCE = re.compile(r"^(aux_|step_gpu_time_)|overlap")


def latency_family(name: str) -> tuple[str, str] | None:
    """(kind, statistic) of a latency percentile name ("ttft_ms_p99" -> ("ttft", "p99")), or
    None for any other name."""
    m = _LATENCY.match(name)
    return (m.group(1), m.group(2)) if m else None


def family_role(stat: str) -> str:
    """A latency family is judged by its median: the median (and the mean, which the gate
    demotes where the family's median is present) gate; the tails (p90, p95, p99, ...) and the
    std are evidence unless a request names them."""
    return GATE if stat in ("median", "mean") else EVIDENCE


def role_of(name: str, registered_gated: bool = True) -> str:
    """A metric's role: the registry's (a latency family's by its statistic), else EVIDENCE
    for every trace-derived name (`aux_*`, `step_gpu_time_*`, overlap), else what its
    registry-table row says."""
    spec = FIXED.get(name)
    if spec is not None:
        return spec.role
    fam = latency_family(name)
    if fam is not None:
        return family_role(fam[1])
    if _EVIDENCE.search(name):
        return EVIDENCE
    return GATE if registered_gated else EVIDENCE


def lookup(name: str) -> MetricSpec | None:
    """The registry's entry for a metric name (latency families by pattern), or None."""
    spec = FIXED.get(name)
    if spec is not None:
        return spec
    fam = latency_family(name)
    if fam is not None:
        return MetricSpec(name, "ms", LOWER, 1.0, role=family_role(fam[1]))
    return None


def seed_rows() -> list[dict]:
    """Rows of the metric_registry table: the fixed metrics and the latency families' usual
    statistics (vLLM writes mean, median and p99)."""
    specs = list(_FIXED) + [MetricSpec(f"{p}_ms_{s}", "ms", LOWER, 1.0, role=family_role(s))
                            for p in _LATENCY_PREFIXES for s in _LATENCY_STATS]
    return [m.row() for m in specs]


def threshold_pct(name: str) -> float:
    spec = lookup(name)
    return spec.threshold_pct if spec is not None and spec.threshold_pct > 0 else UNKNOWN_THRESHOLD_PCT


def parse_thresholds(items: list[str] | None) -> dict[str, float]:
    """`METRIC=PCT` items (`--threshold`, repeatable; the compare view's `thresholds=`), THE
    parser of them; ValueError names the bad one."""
    out = {}
    for t in items or []:
        name, _, val = t.partition("=")
        try:
            pct = float(val)
        except ValueError:
            raise ValueError(f"{t!r}: expected METRIC=PERCENT") from None
        if not name.strip() or not math.isfinite(pct) or pct < 0:
            raise ValueError(f"{t!r}: expected METRIC=PERCENT, a metric name and a finite "
                             "percent >= 0")
        out[name.strip()] = pct
    return out


# what alerts watch when not told: the gating metrics people read first
WATCHED = ("tok_s", "total_tok_s", "req_s", "tpot_ms_mean", "ttft_ms_mean", "itl_ms_mean",
           "e2el_ms_mean", "latency_s", "kv_capacity_tokens")


def watched(names: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """The metrics alerts evaluate: the registry's gating ones among `names` (default:
    WATCHED)."""
    return [m for m in (names if names is not None else WATCHED)
            if lookup(m) is not None and role_of(m) == GATE]
