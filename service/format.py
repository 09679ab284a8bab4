"""Number formatting and the series label: one place for both (CLI tables, PR comment,
dashboard)."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .stats.assess import level_pct as level_pct  # the printed level of alpha, one source

# config keys in the order people read them; other keys follow, sorted
KEY_ORDER = ("batch_size", "tp", "dcp", "pp", "ep", "mtp", "shared_experts", "cuda_graphs",
             "concurrency", "request_rate", "input_len", "output_len", "dtype", "act_bits")
_SHORT = {"batch_size": "M"}
HIDDEN = ("gpu", "gpu_count")  # shown once, at the end


def num(v: float | None, digits: int = 2, missing: str = "-") -> str:
    return missing if v is None else f"{v:,.{digits}f}"


def pct(v: float | None, missing: str = "-") -> str:
    return missing if v is None else f"{v:+.2f}%"


def interval(lo: float | None, hi: float | None, missing: str = "-") -> str:
    return missing if lo is None or hi is None else f"{lo:+.2f}..{hi:+.2f}%"


def _value(v: Any) -> str:
    if isinstance(v, Mapping) and set(v) == {"baseline", "candidate"}:  # a varied key
        return f"{_value(v['baseline'])}→{_value(v['candidate'])}"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def series_label(series: Mapping[str, Any]) -> str:
    """Every config key of a series (varied keys as baseline→candidate) and its GPUs; never cut,
    so two different series never read the same."""
    keys = [k for k in KEY_ORDER if k in series] + sorted(
        k for k in series if k not in KEY_ORDER and k not in HIDDEN)
    parts = [f"{_SHORT.get(k, k)}={_value(series[k])}" for k in keys
             if series[k] not in (None, "")]
    gpu, count = series.get("gpu"), series.get("gpu_count")
    if gpu or count:
        parts.append(f"{count or '?'}x {gpu or '?'}")
    return " ".join(parts) or "-"


def series_short(config: Mapping[str, Any], gpu: str | None = None,
                 gpu_count: int | None = None) -> str:
    """The few keys a chart legend needs (tp, M, order, graphs, load) and the GPUs."""
    parts = []
    if "tp" in config:
        parts.append(f"tp={config['tp']}")
    if "batch_size" in config:
        parts.append(f"M={config['batch_size']}")
    if "shared_experts" in config:
        parts.append(_value(config["shared_experts"]))
    if "cuda_graphs" in config:
        parts.append("graphs" if config["cuda_graphs"] else "eager")
    for k in ("concurrency", "request_rate"):
        if k in config:
            parts.append(f"{k}={config[k]}")
    parts.append(f"{gpu_count or ''}x{gpu or '?'}")
    return " ".join(parts)


def trace_rank(filename: str) -> str:
    """`, rank 3` for a rank file of a trace set (`trace_M1_rank3.json.gz`), else empty."""
    m = re.search(r"rank[_-]?(\d+)", filename)
    return f", rank {m.group(1)}" if m else ""
