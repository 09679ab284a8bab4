"""`perfwarden bisect --good REF --bad REF ... -- CMD` (spec/api.md, bisect), its `--step` under
`git bisect run`, and the exit codes git reads (128: stop the bisect). Its body: commands/bisect.py."""
from __future__ import annotations

import argparse

from .common import command


def add_bisect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="find the first bad commit: reference runs at --good, then "
                       "`git bisect run` with CMD at each step (exit 0 found, 3 undecided, 2 error)")
    p.add_argument("--good", metavar="REF")
    p.add_argument("--bad", metavar="REF")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--server", required=True)
    p.add_argument("--runs", type=int, default=3, help="runs of CMD per commit (default 3)")
    p.add_argument("--metric", action="append")
    p.add_argument("--threshold", action="append", metavar="METRIC=PCT")
    p.add_argument("--id", help=argparse.SUPPRESS)
    p.add_argument("--step", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--reference", help=argparse.SUPPRESS)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ... (posts runs with --server)")
    p.set_defaults(func=command("bisect", "cmd_bisect"))
