"""`perfwarden noise` and `perfwarden attribute`'s bodies: the server's answer, or the same use
case on the local database (reads.py), printed as a table (or its JSON)."""
from __future__ import annotations

import argparse

from ...attribution.schemas import AttributionOut
from ...gate.report import print_noise
from ...history.schemas import NoiseOut
from ..common import api, command


def cmd_noise(args: argparse.Namespace) -> int:
    params = {"benchmark": args.benchmark, "metric": args.metric}
    params.update({k: v for k, v in (("branch", args.branch), ("baseline", args.baseline)) if v})
    if args.server:
        result = NoiseOut.model_validate(api(args.server, "GET", "/api/v1/noise", params=params))
    else:
        result = command("reads", "noise")(args)
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
    if args.server:
        result = AttributionOut.model_validate(api(args.server, "GET", "/api/v1/attribution",
                                                   params=params))
    else:
        result = command("reads", "attribution")(args)
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
