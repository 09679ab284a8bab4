"""THE trace pipeline: files -> loaded ranks -> analysis -> summary.

One path for every caller: `perfwarden analyze` (and its --diff sides), the collector's profile
pass, `perfwarden ingest --trace` and the service's trace-analysis job. The ranks of a run (one
file each) load in parallel processes, each rank projected onto its steps where it loads; the
summary's `ranks` name each rank's figures with its file and the rank number in the file's
name. The ordering check runs when asked for (guarded kernels or phase, `Check`), or on a
preset's kernels where the trace holds any (the server: spec/metrics.md)."""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .analysis import analyze, join_projections, project, resolve_steps
from .hostops import host_ops
from .load import load_traces, rank_of
from .model import Trace, TraceError, concat_traces, rank_offsets
from .options import Options, Projection
from .ordering import REFERENCE_REGEX, check_ordering
from .presets import GUARD_PRESETS, ROUTED_RANGES
from .progress import Progress
from .roles import stream_roles
from .steps import keep_regex
from .summary import TraceSummary

SERVER_PRESET = "moe-routed"
MAX_GUARDED_CANDIDATES = 200_000  # above this a preset check is left to `perfwarden analyze`


@dataclass(frozen=True)
class Check:
    """The ordering check asked for: guarded kernels by name and/or launch phase (with an
    eager reference trace for graph replays), or a preset's kernels where the trace has any."""

    guard_kernels: str | None = None
    guard_range: str | None = None
    reference: tuple[str, ...] = ()
    preset: str | None = None
    plausible: bool = False  # refuse times no profile holds (the server's uploads)

    @property
    def guarded(self) -> bool:
        return bool(self.guard_kernels or self.guard_range)


SERVER_CHECK = Check(preset=SERVER_PRESET, plausible=True)
MAX_SPAN_NS = 24 * 3600 * 10**9  # no event lasts, and no trace spans, longer than a day


def check_plausible(trace: Trace, name: str) -> None:
    """TraceError where an event (a kernel, a launch call, a range) lasts less than nothing or
    longer than MAX_SPAN_NS, or the trace's events span longer than that."""
    parts = [(kind, t.start_ns, t.end_ns) for kind, t in
             (("kernel", trace.ops), ("call", trace.calls), ("range", trace.ranges)) if len(t)]
    for kind, start, end in parts:
        dur = end - start
        if int(dur.min()) < 0 or int(dur.max()) > MAX_SPAN_NS:
            bad = int(dur.max()) if int(dur.max()) > MAX_SPAN_NS else int(dur.min())
            raise TraceError(f"{name}: refused: a {kind} lasts {bad / 1e9:.3g} s (an event of a "
                             f"profile lasts from 0 to {MAX_SPAN_NS // 10**9 // 3600} h)")
    if parts:
        lo = min(int(s.min()) for _, s, _ in parts)
        hi = max(int(e.max()) for _, _, e in parts)
        if hi - lo > MAX_SPAN_NS:
            raise TraceError(f"{name}: refused: its events span {(hi - lo) / 1e9:.3g} s (a "
                             f"profile spans at most {MAX_SPAN_NS // 10**9 // 3600} h)")


def analyze_files(paths: Sequence[str | os.PathLike], opts: Options | None = None,
                  progress: Progress | None = None, jobs: int | None = None,
                  check: Check | None = None, names: Sequence[str] | None = None,
                  keep_in: Path | None = None) -> TraceSummary:
    """Analyze one trace, or the ranks of one run given as several files. `names`: the files'
    own names where they are stored under others (content-addressed uploads); `keep_in`: a
    folder keeping each file's loaded columns (load.load_traces), so a set whose ranks were
    analyzed one by one is not parsed again."""
    opts = opts or Options()
    check = check or Check()
    default = not check.guarded  # no guard named: the routed-expert ranges, then a preset
    keep = keep_regex(opts.step_regex, check.guard_range, ROUTED_RANGES if default else None,
                      REFERENCE_REGEX)
    # a set's ranks are projected onto their steps where they load, in parallel
    then = functools.partial(rank_projection, opts) if len(paths) > 1 else None
    traces = load_traces(paths, keep, progress, jobs, names, keep_in, then)
    if check.plausible:
        for t in traces:
            check_plausible(t, Path(t.source).name)
    trace = concat_traces(traces)
    topts = resolve_steps(trace, opts)
    proj = joined_projection(traces, str(topts.step_regex)) or \
        project(trace, str(topts.step_regex))
    summary = analyze(trace, topts, proj)
    if not len(trace.ops) and all(_kineto_named(p) for p in names or paths):
        # a CPU trace: its operators stand in for kernels
        summary["host_ops"] = host_ops(paths, str(topts.step_regex), opts.kernel_limit)
    if len(traces) > 1:
        summary["ranks"] = rank_rows(summary, traces)
    if check.guarded:
        ref = concat_traces(load_traces(check.reference, keep, progress)) \
            if check.reference else None
        summary["ordering"] = check_ordering(trace, check.guard_kernels, topts, proj,
                                             stream_roles(trace, proj, topts),
                                             guard_range=check.guard_range, reference=ref)
    else:
        ordering = _default_check(trace, topts, proj, check.preset)
        if ordering is not None:
            summary["ordering"] = ordering
    return summary


def rank_projection(opts: Options, trace: Trace) -> tuple[str, Projection]:
    """One rank projected onto the steps its own ranges choose, and their regex."""
    regex = str(resolve_steps(trace, opts).step_regex)
    return regex, project(trace, regex)


def joined_projection(traces: list[Trace], regex: str) -> Projection | None:
    """The set's projection from its ranks' (rank_projection) where each was made with the
    set's step regex and no process or thread key is negative (the offsets' premise); None
    where it must be made on the joined trace."""
    if len(traces) < 2 or not all(isinstance(t.prepared, tuple) and t.prepared[0] == regex
                                  for t in traces):
        return None
    for t in traces:
        keys = (t.ops.proc, t.calls.proc, t.calls.thread, t.ranges.proc, t.ranges.thread)
        if any(k.size and int(k.min()) < 0 for k in keys):
            return None
    return join_projections([t.prepared[1] for t in traces], rank_offsets(traces))


def _default_check(trace: Trace, opts: Options, proj: Projection, preset: str | None
                   ) -> dict | None:
    """No guard named (spec/metrics.md, Ordering check verdicts): the routed experts' NVTX ranges
    where the trace has any, and the preset's kernels (`preset`, else SERVER_PRESET); a preset
    asked for is tried first. The first that decides (ok or hazard) answers; where neither
    does, the first that ran, its reason naming the flag that would decide it."""
    ranges = lambda: _range_check(trace, opts, proj)  # noqa: E731 - tried in either order
    kernels = lambda: _preset_check(trace, opts, proj, preset or SERVER_PRESET)  # noqa: E731
    ran = []
    for attempt in ((kernels, ranges) if preset else (ranges, kernels)):
        o = attempt()
        if o is not None:
            if o.get("verdict") in ("ok", "hazard"):
                return o
            ran.append(o)
    return ran[0] if ran else None


def _range_check(trace: Trace, opts: Options, proj: Projection) -> dict | None:
    """The ordering check on the kernels launched inside the routed experts' ranges; None where
    the trace has no such range or they hold no kernel of the steps."""
    rx = re.compile(ROUTED_RANGES)
    if not any(rx.search(n) for n in trace.range_name_counts):
        return None
    o = check_ordering(trace, None, opts, proj, stream_roles(trace, proj, opts),
                       guard_range=ROUTED_RANGES)
    if not o["guarded_kernels"]:
        return None
    o["default_guard"] = "routed-expert ranges"
    return o


def _kineto_named(p: str | os.PathLike) -> bool:
    return str(p).endswith((".json", ".json.gz", ".pt.trace.json"))


def _preset_check(trace: Trace, opts: Options, proj: Projection, preset: str) -> dict | None:
    """The ordering check on a preset's kernels; None where the steps hold none of them."""
    regex = GUARD_PRESETS[preset]
    rx = re.compile(regex)
    hit = [i for i, n in enumerate(trace.names) if rx.search(n)]
    if not hit:
        return None
    n = int((np.isin(trace.ops.name_id, hit) & (proj.op_step >= 0)).sum())
    if n > MAX_GUARDED_CANDIDATES:
        return {"preset": preset, "verdict": "unknown", "guarded_kernels": n,
                "reason": f"{n:,} guarded kernels: more than the server checks; run "
                          f"`perfwarden analyze --guard-preset {preset}` on the files"}
    if not n:
        return None
    o = check_ordering(trace, regex, opts, proj, stream_roles(trace, proj, opts))
    if not o["guarded_kernels"]:
        return None
    o["preset"] = preset
    return o


def rank_rows(summary: TraceSummary, traces: list[Trace]) -> list[dict]:
    """Name each rank row by its file (and the rank number in its name, `rank3`, `TP-3`)."""
    rows = list(summary["ranks"])
    if len(rows) != len(traces):
        return rows
    for row, t in zip(rows, traces):
        row["file"] = t.source
        r = rank_of(t.source)
        if r is not None:
            row["rank"] = r
    return rows
