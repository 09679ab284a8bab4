"""`perfwarden gate`: candidate runs (by id or commit) or an experiment judged against a baseline
on the server; exit codes as in `common.py`. Its body: commands/gate.py."""
from __future__ import annotations

import argparse

from .common import command


def add_gate(sub: argparse._SubParsersAction) -> None:
    """`gate`: candidate runs or an experiment against a baseline."""
    p = sub.add_parser("gate", help="judge candidate runs against a baseline (exit 0 pass, "
                       "1 regression, 3 inconclusive; errors 64 usage, 65 bad input, "
                       "69 unreachable, 2 other)")
    p.add_argument("--server", required=True)
    p.add_argument("--benchmark")
    p.add_argument("--baseline", help="a baseline name, or label:L, commit:SHA, runs:ID,ID")
    p.add_argument("--experiment", metavar="ID",
                   help="judge an experiment's candidate arm against its baseline arm")
    p.add_argument("--run", type=int, action="append", help="candidate run id (repeatable)")
    p.add_argument("--commit", help="candidate: the runs of this commit (HEAD: the checked-out one)")
    p.add_argument("--metric", action="append")
    p.add_argument("--threshold", action="append", metavar="METRIC=PCT")
    p.add_argument("--vary", action="append", metavar="KEY",
                   help="config key the candidate deliberately changes (repeatable)")
    p.add_argument("--bisect", action="store_true", help="exit codes for `git bisect run`: 0 "
                   "good, 1 bad, 125 skip (inconclusive or error)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=command("gate", "cmd_gate"))
