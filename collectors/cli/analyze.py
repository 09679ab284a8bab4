"""`analyze`: per-step auxiliary-stream gaps, overlap, kernels and the ordering check of trace
files, or the diff of two trace sets. The trace pipeline is collectors/traces/; `_summary` is
the one place this command calls it."""
from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING

from .. import heap
from ..errors import BadInput, UsageError
from ..options import positive, stream
from ..report import print_analysis, print_diff
from ..traces import Options, TraceError
from ..traces.diff import diff_summaries
from ..traces.pipeline import Check, analyze_files
from ..traces.presets import GUARD_PRESETS, guard_regex
from ..traces.progress import Progress

if TYPE_CHECKING:
    from ..traces import Options
    from ..traces.progress import Progress
    from ..traces.summary import TraceSummary


def add_analyze(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("analyze", help="per-step auxiliary-stream gaps, overlap and kernels of traces")
    a.add_argument("traces", nargs="+", metavar="TRACE")
    a.add_argument("--step-regex", default=None,
                   help="the step ranges (default: the first family found: decode_step, "
                        "SGLang step[DECODE bs=N], vLLM execute_..._context_N(...)_generation_N"
                        "(...), ProfilerStep#N; decode and prefill steps told apart)")
    a.add_argument("--main-stream", type=stream, action="append", default=[])
    a.add_argument("--aux-stream", type=stream, action="append", default=[])
    a.add_argument("--min-gap-us", type=positive(float), default=10.0)
    a.add_argument("--diff", nargs="+", metavar="CANDIDATE_TRACE",
                   help="compare against these traces (the candidate)")
    a.add_argument("--guard-kernels", metavar="REGEX",
                   help="ordering check: main-stream kernels that must never run beside aux work")
    a.add_argument("--guard-preset", choices=sorted(GUARD_PRESETS),
                   help="ordering check on a named kernel set: moe-routed = the routed-expert "
                        "kernels of vLLM and SGLang and persistent kernels (a starting point; "
                        "--guard-kernels adds to it)")
    a.add_argument("--guard-range", metavar="REGEX",
                   help="ordering check by phase: the kernels launched inside NVTX ranges of this "
                        "name (e.g. routed_experts); CUDA graph replays are matched through the "
                        "eager reference steps of the same step")
    a.add_argument("--reference", nargs="+", metavar="EAGER_TRACE",
                   help="with --guard-range on graph replays: an eager trace of the same step "
                        "(when the trace has no eager_reference_step ranges of its own)")
    a.add_argument("--jobs", type=positive(int), default=None,
                   help="rank files loaded in parallel (default: one per core)")
    a.add_argument("--json", action="store_true")
    a.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a.set_defaults(func=cmd_analyze)


def cmd_analyze(args: argparse.Namespace) -> int:
    guard_kernels = guard_regex(args.guard_preset, args.guard_kernels)
    try:
        for rx in (args.step_regex, guard_kernels, args.guard_range):
            if rx:
                re.compile(rx)
    except re.error as e:
        raise UsageError(f"invalid regex: {e}") from None
    opts = Options(step_regex=args.step_regex, min_gap_us=args.min_gap_us,
                   main_streams=args.main_stream, aux_streams=args.aux_stream)
    prog = Progress(None if args.quiet else sys.stderr)
    if args.reference and not args.guard_range:
        raise UsageError("--reference is the eager trace for --guard-range; give --guard-range too")
    heap.keep_freed()  # a command that ends with the analysis: its arrays' memory is reused
    try:
        base = _summary(args.traces, args, opts, guard_kernels, prog)
        result: dict = dict(base)
        if args.diff:
            cand = _summary(args.diff, args, opts, guard_kernels, prog)
            result = diff_summaries(base, cand)
            result["base_summary"], result["candidate_summary"] = base, cand
    except TraceError as e:
        raise BadInput(str(e)) from None
    for w in (result.get("warnings") or []) if not args.diff else (
            base["warnings"] + result["candidate_summary"]["warnings"]):
        print(f"warning: {w}", file=sys.stderr)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        (print_diff if args.diff else print_analysis)(result)
    return 0


def _summary(paths: list[str], args: argparse.Namespace, opts: Options, guard_kernels: str | None,
             prog: Progress) -> TraceSummary:
    """The one trace pipeline (collectors/traces/pipeline.py) on one trace set."""

    check = Check(guard_kernels, args.guard_range, tuple(args.reference or ()))
    return analyze_files(paths, opts, prog, args.jobs, check)
