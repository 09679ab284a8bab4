"""`perfwarden noise` (run-to-run and trial spread of a history) and `perfwarden attribute` (which
config key explains a factorial set of runs): asked of a server with --server, else the same use
case on the local database. Their bodies: commands/history.py."""
from __future__ import annotations

import argparse

from .common import command


def add_history(sub: argparse._SubParsersAction) -> None:
    """`noise` and `attribute`."""
    p = sub.add_parser("noise", help="run-to-run and trial spread of a benchmark's history")
    p.add_argument("benchmark")
    p.add_argument("--metric", default="tok_s")
    p.add_argument("--branch", help="history of this branch (default: the benchmark's default)")
    p.add_argument("--baseline", help="the runs of this baseline reference instead")
    p.add_argument("--server", help="ask this server (default: the local database)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=command("history", "cmd_noise"))

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
    p.set_defaults(func=command("history", "cmd_attribute"))
