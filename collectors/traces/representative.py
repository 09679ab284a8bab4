"""Can this profile show what the timed trials ran? (spec/metrics.md, Representativeness warnings)

Warnings from the run's configuration and its trace summary: the config says CUDA graphs but
the trace has no graph replays (an eager profile of a graph run); the config says the shared
experts overlap but no auxiliary lane was found; the config's ranks are more than the trace set
holds, or the rank numbers in the files' names have a hole."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _flag(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false", "1", "0", "on", "off"):
        return v.lower() in ("true", "1", "on")
    return None


def expected_ranks(config: Mapping[str, Any]) -> int:
    n = 1
    for k in ("tp", "pp", "dp"):
        v = config.get(k)
        if isinstance(v, int) and v > 0:
            n *= v
    return n


def trace_ranks(summary: Mapping[str, Any]) -> int:
    if summary.get("ranks"):
        return len(summary["ranks"])
    devs = {k["device"] for k in summary.get("kernels") or []}
    devs |= {s["device"] for s in summary.get("streams") or []}
    return max(1, len(devs)) if (summary.get("ops") or devs) else 0


def warnings_for(summary: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    out = []
    graphs = _flag(config.get("cuda_graphs"))
    if graphs is None and _flag(config.get("enforce_eager")) is not None:
        graphs = not _flag(config.get("enforce_eager"))
    if graphs and summary.get("steps") and not summary.get("graph_replay_ops"):
        out.append("the run's config says CUDA graphs, but the trace's steps hold no graph "
                   "replays: this profile ran eagerly and cannot show what the timed trials ran")
    if str(config.get("shared_experts", "")).lower() == "overlap" and summary.get("steps") \
            and not summary.get("aux_streams"):
        out.append("the run's config says the shared experts overlap (shared_experts=overlap), "
                   "but the trace has no auxiliary stream in its steps")
    numbered = [r.get("rank") for r in summary.get("ranks") or [] if r.get("file")]
    if numbered and all(isinstance(r, int) for r in numbered):
        missing = sorted(set(range(max(numbered) + 1)) - set(numbered))
        if missing:
            out.append(f"the trace set lacks rank(s) {', '.join(map(str, missing))} (its files "
                       f"are ranks {', '.join(map(str, sorted(numbered)))})")
    want, got = expected_ranks(config), trace_ranks(summary)
    if want > 1 and got < want:
        out.append(f"the run's config has {want} ranks (tp x pp x dp), but the trace set holds "
                   f"{got}: profile every rank (one file each) to see all of them")
    return out
