"""Files -> ranks -> analysis -> summary, the way the server (and `perfwarden ingest --trace`)
summarizes a run's trace set: the step family detected, and the ordering check on the
routed-expert kernels of the `moe-routed` preset where the trace has any (spec/metrics.md v1.2)."""
from __future__ import annotations

from .analysis import Options, analyze, project, resolve_steps, stream_roles
from .model import Trace
from .ordering import REFERENCE_REGEX, check_ordering
from .presets import GUARD_PRESETS
from .steps import keep_regex
from .summary import TraceSummary

DEFAULT_PRESET = "moe-routed"
MAX_GUARDED_CANDIDATES = 200_000  # above this the server leaves the check to `perfwarden analyze`
# the host ranges a summary needs: the step family and the eager reference steps of graph runs
KEEP = keep_regex(None, REFERENCE_REGEX)


def summarize(trace: Trace, opts: Options | None = None,
              preset: str | None = DEFAULT_PRESET) -> TraceSummary:
    opts = resolve_steps(trace, opts)
    proj = project(trace, opts.step_regex)
    summary = analyze(trace, opts, proj)
    if preset:
        regex = GUARD_PRESETS[preset]
        import re

        rx = re.compile(regex)
        hit = [i for i, n in enumerate(trace.names) if rx.search(n)]
        if hit:
            import numpy as np

            n = int((np.isin(trace.ops.name_id, hit) & (proj.op_step >= 0)).sum())
            if n > MAX_GUARDED_CANDIDATES:
                summary["ordering"] = {
                    "preset": preset, "verdict": "unknown", "guarded_kernels": n,
                    "reason": f"{n:,} guarded kernels: more than the server checks; run "
                              f"`perfwarden analyze --guard-preset {preset}` on the files"}
            elif n:
                o = check_ordering(trace, regex, opts, proj, stream_roles(trace, proj, opts))
                if o["guarded_kernels"]:
                    o["preset"] = preset
                    summary["ordering"] = o
    return summary
