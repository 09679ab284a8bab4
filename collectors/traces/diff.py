"""Trace diff: which kernels and which gap figures got slower or faster between two analyses."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .names import kernel_key
from .options import KERNEL_LIMIT

GAP_KEYS = ("aux_gap_mean_us", "aux_gap_median_us", "aux_gap_p95_us", "aux_idle_per_step_us",
            "aux_busy_per_step_us", "aux_main_overlap_us_per_step", "step_gpu_time_us_mean",
            "step_gpu_time_us_median")


def shown_names(names: Sequence[str], width: int = 60) -> dict[str, str]:
    """Each name as a table shows it in `width` characters, always with the part that tells it
    from the other names: a long name whose first difference from its nearest neighbour lies
    past the width keeps its head (the function's name), then an ellipsis, then the text from
    just before that difference, never a common prefix cut off where the names begin to
    differ."""
    uniq = sorted(set(names))
    out: dict[str, str] = {}
    for i, name in enumerate(uniq):
        if len(name) <= width:
            out[name] = name
            continue
        near = [uniq[j] for j in (i - 1, i + 1) if 0 <= j < len(uniq)]  # sorted: nearest prefixes
        lcp = max((len(os.path.commonprefix([name, o])) for o in near), default=0)
        if lcp < width - 12:
            out[name] = name[: width - 1] + "…"
            continue
        fn = re.split(r"[<(]", name, maxsplit=1)[0]  # the function's name, its arguments cut
        head = name[:max(8, min(len(fn), width - 24))]
        start = max(len(head), lcp - 12)
        tail = name[start:start + width - len(head) - 2]
        out[name] = head + "…" + tail + ("…" if start + len(tail) < len(name) else "")
    return out


def _per_step(summary: Mapping[str, Any]) -> dict[str, dict]:
    """Kernel time per step by kernel key (names.kernel_key: one key whatever producer wrote the
    name; streams summed, roles kept apart), each with the first name seen."""
    steps = summary.get("steps") or 1
    main = {(s["device"], s["stream"]) for s in summary.get("main_streams", [])}
    out: dict[str, dict] = {}
    for k in summary.get("kernels", []):
        role = "main" if (k["device"], k["stream"]) in main else "aux"
        row = out.setdefault(kernel_key(k["name"]), {"name": k["name"], "count": 0,
                                                    "total_us": 0.0, "roles": set()})
        row["count"] += k["count"]
        row["total_us"] += k["total_us"]
        row["roles"].add(role)
    for row in out.values():
        row["per_step_us"] = row["total_us"] / steps
        row["mean_us"] = row["total_us"] / row["count"] if row["count"] else 0.0
    return out


def run_kernels(summary: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, str], bool]:
    """One run's kernel time per step by kernel key, read from its stored summary (no pass over
    its trace), the name shown for each key, and whether the kernel list is whole (a list cut at
    the kernel limit cannot say a kernel missing from it took no time)."""
    rows = _per_step(summary)
    whole = len(summary.get("kernels") or []) < KERNEL_LIMIT
    return ({k: r["per_step_us"] for k, r in rows.items()}, {k: r["name"] for k, r in rows.items()},
            whole)


def diff_summaries(base: Mapping[str, Any], cand: Mapping[str, Any], limit: int = 20) -> dict:
    gaps = []
    for key in GAP_KEYS:
        b, c = base.get(key), cand.get(key)
        if b is None and c is None:
            continue
        delta = None if b is None or c is None else c - b
        pct = None if delta is None or not b else 100.0 * delta / b
        gaps.append({"metric": key, "base": b, "candidate": c, "delta": delta, "delta_pct": pct})
    kb, kc = _per_step(base), _per_step(cand)
    rows: list[dict[str, Any]] = []
    for key in set(kb) | set(kc):
        b, c = kb.get(key), kc.get(key)
        bp = b["per_step_us"] if b else 0.0
        cp = c["per_step_us"] if c else 0.0
        either = b or c
        assert either is not None
        rows.append({"name": either["name"], "key": key,
                     "role": "/".join(sorted(either["roles"] | (c or either)["roles"])),
                     "base_per_step_us": bp, "candidate_per_step_us": cp,
                     "delta_per_step_us": cp - bp,
                     "base_mean_us": b["mean_us"] if b else None,
                     "candidate_mean_us": c["mean_us"] if c else None,
                     "status": "new" if not b else ("gone" if not c else
                                                    ("slower" if cp > bp else "faster"
                                                     if cp < bp else "same"))})
    rows.sort(key=lambda r: -abs(r["delta_per_step_us"]))
    shown = shown_names([r["name"] for r in rows])
    for r in rows:
        r["shown"] = shown[r["name"]]
    def side(s: Mapping[str, Any]) -> dict:
        o = s.get("ordering") or {}
        return {"source": s.get("source"), "steps": s.get("steps"),
                "prefill_steps": s.get("prefill_steps"), "step_source": s.get("step_source"),
                "ordering": o.get("verdict"), "ordering_reason": o.get("reason")}

    return {"base": side(base), "candidate": side(cand),
            "gaps": gaps, "kernels": rows[:limit],
            "slower": [r["name"] for r in rows if r["status"] in ("slower", "new")][:limit],
            "faster": [r["name"] for r in rows if r["status"] in ("faster", "gone")][:limit]}
