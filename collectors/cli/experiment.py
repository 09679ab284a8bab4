"""`experiment`: interleaved A/B on this host (collectors/experiment.py runs the blocks and keeps
the books). The judge is passed in (`Judging`): on a GPU node only the server's (`--server`);
`perfwarden experiment` (service/cli/commands/experiment.py) also judges on a local SQLite database."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from ..errors import UsageError
from ..experiment import (
    ExperimentConfig,
    Judge,
    Judging,
    Outcome,
    check_commands,
    conduct,
    new_id,
    server_judge,
)
from ..options import gate_fields, positive
from ..report import print_verdict

FULL_INSTALL = ("--until-decided judges between blocks: give --server URL (the server judges), or "
                "run it with perfwarden's full install (pip install 'perfwarden[all]')")


def add_experiment(sub: argparse._SubParsersAction, judging: Judging) -> None:
    e = sub.add_parser("experiment", help="interleaved A/B on this host: the arms alternate in "
                       "separate processes (ABBA BAAB ...), judged block by block")
    e.add_argument("--baseline-cmd", required=True, help="command writing results to {out}")
    e.add_argument("--candidate-cmd", required=True, help="command writing results to {out}")
    e.add_argument("--pairs", type=positive(int), default=6, help="blocks (one run of each arm)")
    e.add_argument("--until-decided", action="store_true",
                   help="after --pairs blocks, add blocks until decided or --max-pairs")
    e.add_argument("--max-pairs", type=positive(int), default=20)
    e.add_argument("--id", help="experiment id (default: exp-TIME-RANDOM)")
    e.add_argument("--benchmark")
    e.add_argument("--label")
    e.add_argument("--vary", action="append", metavar="KEY")
    e.add_argument("--metric", action="append")
    e.add_argument("--threshold", action="append", metavar="METRIC=PCT")
    e.add_argument("--workdir")
    e.add_argument("--timeout", type=positive(float), default=3600.0,
                   help="seconds per arm command")
    e.add_argument("--out")
    e.add_argument("--server")
    e.set_defaults(func=lambda args: cmd_experiment(args, judging))


def cmd_experiment(args: argparse.Namespace, judging: Judging) -> int:
    """Run the blocks; the judge (the server's with `--server`, else `judging.local`) decides
    between blocks with `--until-decided` and gives the verdict that `judging.show` prints."""

    check_commands(args.baseline_cmd, args.candidate_cmd)
    if args.until_decided and args.max_pairs < args.pairs:
        raise UsageError(f"--max-pairs {args.max_pairs} is below --pairs {args.pairs}")
    if args.until_decided and not args.server and judging.local is None:
        raise UsageError(FULL_INSTALL)
    exp_id = args.id or new_id()
    cfg = ExperimentConfig(baseline_cmd=args.baseline_cmd, candidate_cmd=args.candidate_cmd,
                           pairs=args.pairs, max_pairs=args.max_pairs if args.until_decided else 0,
                           exp_id=exp_id, benchmark=args.benchmark, label=args.label,
                           workdir=args.workdir or tempfile.mkdtemp(prefix=f"perfwarden-{exp_id}-"),
                           timeout_s=args.timeout)
    cfg.question = gate_fields(args.metric, args.threshold, args.vary)
    body = {"experiment": exp_id, "max_looks": cfg.looks, **cfg.question}
    judge: Judge | None = None
    if args.server:
        judge = server_judge(args.server, body)
    elif judging.local is not None:
        judge = judging.local(Path(cfg.workdir), body)
    return judging.show(conduct(cfg, judge, args.until_decided, args.out))


def show_on_node(outcome: Outcome) -> int:
    """The GPU node's printout: the server's verdict, or how to get one."""

    if outcome.result is None:
        print(f"experiment {outcome.exp_id}: {len(outcome.blocks)} block(s); judge it with "
              f"`perfwarden gate --experiment {outcome.exp_id}` against a server, or "
              "`perfwarden experiment` locally", file=sys.stderr)
        return 0
    print(f"experiment {outcome.exp_id}: {len(outcome.blocks)} block(s), judged by "
          f"{outcome.judged_by}")
    print_verdict(outcome.result)
    return exit_code(outcome.result)


def exit_code(result: dict) -> int:
    """0 pass, 1 fail (a regression), 3 inconclusive."""
    return {"pass": 0, "fail": 1}.get(result["verdict"], 3)


ON_NODE = Judging(local=None, show=show_on_node)
