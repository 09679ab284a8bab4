"""`perfwarden noise` and `perfwarden attribute`'s bodies: the server's answer, or the same use
case on the local database, printed as a table (or its JSON)."""
from __future__ import annotations

import argparse

from ...attribution.fit import attribution
from ...attribution.schemas import AttributionOut
from ...gate.report import print_noise
from ...history.reads import noise
from ...history.schemas import NoiseOut
from .local import ask


def cmd_noise(args: argparse.Namespace) -> int:
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
    params: dict = {"benchmark": args.benchmark, "metric": args.metric}
    if args.label:
        params["label"] = args.label
    if args.branch:
        params["branch"] = args.branch
    if args.gpu:
        params["gpu"] = args.gpu
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
