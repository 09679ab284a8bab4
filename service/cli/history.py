"""`perfwarden noise` (run-to-run and trial spread of a history) and `perfwarden attribute` (which
config key explains a factorial set of runs): asked of a server with --server, else the same use
case on the local database."""
from __future__ import annotations

import argparse

from .common import ask


def add_history(sub: argparse._SubParsersAction) -> None:
    """`noise` and `attribute`."""
    p = sub.add_parser("noise", help="run-to-run and trial spread of a benchmark's history")
    p.add_argument("benchmark")
    p.add_argument("--metric", default="tok_s")
    p.add_argument("--branch", help="history of this branch (default: the benchmark's default)")
    p.add_argument("--baseline", help="the runs of this baseline reference instead")
    p.add_argument("--server", help="ask this server (default: the local database)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_noise)

    p = sub.add_parser("attribute", help="which config key explains the run means, trial spread "
                       "or non-identical repeats of a factorial set of runs")
    p.add_argument("benchmark")
    p.add_argument("--metric", default="tok_s", help="a metric, or `determinism`")
    p.add_argument("--label", action="append", help="runs of these labels (repeatable)")
    p.add_argument("--branch", help="whose history (default: the benchmark's default branch)")
    p.add_argument("--gpu", help="runs of this GPU model and count (`NVIDIA H200 x1`), where "
                                 "the runs are of several")
    p.add_argument("--server", help="ask this server (default: the local database)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_attribute)


def cmd_noise(args: argparse.Namespace) -> int:
    from ..gate_report import print_noise
    from ..schemas import NoiseOut
    from ..usecases.history import noise

    params = {"benchmark": args.benchmark, "metric": args.metric}
    params.update({k: v for k, v in (("branch", args.branch), ("baseline", args.baseline)) if v})
    result = ask(args.server, "/api/v1/noise", params, NoiseOut,
                  lambda session: noise(session, args.benchmark, args.metric, args.branch,
                                        args.baseline))
    if args.json:
        print(result.model_dump_json(indent=1))
        return 0
    print_noise(result)
    return 0


def cmd_attribute(args: argparse.Namespace) -> int:
    """Which config key explains the run means, the trial spread or non-identical repeats."""
    from ..schemas import AttributionOut

    params: dict = {"benchmark": args.benchmark, "metric": args.metric}
    if args.label:
        params["label"] = args.label
    if args.branch:
        params["branch"] = args.branch
    if args.gpu:
        params["gpu"] = args.gpu
    from ..usecases.attribution import attribution

    result = ask(args.server, "/api/v1/attribution", params, AttributionOut,
                  lambda session: attribution(session, args.benchmark, args.metric, args.label,
                                              args.branch, args.gpu))
    if args.json:
        print(result.model_dump_json(indent=1))
        return 0
    print(f"attribution over {result.runs} run(s) of {result.benchmark} / {result.metric}")
    for title, factors, sentence in (
            ("run means" if result.metric != "determinism" else "bitwise-identical repeats",
             result.factors, result.finding),
            ("trial spread", result.spread_factors, result.spread_finding)):
        if factors is None:
            continue
        print(f"\n  {title}: {sentence}")
        print(f"  {'key':<18} {'explains':>9} {'p (Holm)':>9} {'effect':>10}  levels")
        for f in factors:
            p = "-" if f.p_corrected is None else f"{f.p_corrected:.2g}"
            print(f"  {f.key:<18} {100 * f.explains:>8.1f}% {p:>9} {f.effect:>10.3g}  "
                  f"{', '.join(map(str, f.levels))}")
    return 0
