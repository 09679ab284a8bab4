"""`perfwarden bisect`'s body: reference runs at the good commit, then `git bisect run` with the
step command at each commit (experiments/bisect.py drives it); `--step` is one such commit."""
from __future__ import annotations

import argparse
import secrets
import sys
from datetime import datetime, timezone

from collectors.errors import CliError, UsageError
from collectors.options import thresholds

from ...experiments import bisect as uc
from ...experiments.bisect import Plan
from ...gate.report import print_gate
from ...gate.schemas import GateOut
from ..common import EXIT_INCONCLUSIVE, EXIT_PASS, api


def _bisect_plan(args: argparse.Namespace) -> Plan:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else list(args.cmd)
    if not cmd:
        raise UsageError("bisect: give the command that collects and posts runs after --")
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    bid = args.id or f"bisect-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"

    def call(method: str, path: str, **kw) -> dict:
        return api(args.server, method, path, **kw)

    return Plan(bisect_id=bid, benchmark=args.benchmark, api=call, cmd=cmd, runs=args.runs,
                metrics=args.metric, thresholds=thresholds(args.threshold) or None)


def cmd_bisect(args: argparse.Namespace) -> int:
    """`perfwarden bisect --good REF --bad REF ... -- CMD` (spec/api.md, bisect); with
    `--step` one commit of the `git bisect run` it drives."""
    def show(raw: dict) -> None:
        print_gate(GateOut.model_validate(raw))

    plan = _bisect_plan(args)
    if args.step:
        try:
            plan.reference = [int(x) for x in (args.reference or "").split(",") if x]
        except ValueError:
            raise UsageError(f"--reference {args.reference!r}: expected run ids") from None
        if not plan.reference:
            raise UsageError("--step needs --reference RUN,RUN,...")
        try:
            return uc.step(plan, show)
        except (CliError, uc.BisectError) as e:
            print(f"error: {e}", file=sys.stderr)
            return uc.ABORT
    if not args.good or not args.bad:
        raise UsageError("bisect: give --good REF and --bad REF")
    step_argv = [sys.executable, "-m", "service.cli", "bisect", "--step", "--id", plan.bisect_id,
                 "--benchmark", args.benchmark, "--server", args.server, "--runs", str(args.runs)]
    for m in args.metric or []:
        step_argv += ["--metric", m]
    for t in args.threshold or []:
        step_argv += ["--threshold", t]
    try:
        out = uc.bisect(plan, args.good, args.bad, step_argv)
    except uc.BisectError as e:
        raise CliError(str(e)) from None
    if out.exit_code == uc.UNDECIDED:
        print(f"bisect {plan.bisect_id}: undecided: skipped commits left {len(out.candidates)} "
              "candidate(s) for the first bad commit:")
        for c in out.candidates:
            print(f"  {c}")
        return EXIT_INCONCLUSIVE
    assert out.first_bad is not None
    print(f"first bad commit: {out.first_bad} {out.subject}")
    print(f"bisect {plan.bisect_id}: reference runs {plan.reference} at {args.good}")
    if out.gate is not None:
        show(out.gate)
    return EXIT_PASS
