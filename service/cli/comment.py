"""`perfwarden comment`: post or update the PR comment with the verdict and, with --check, the
check run (or commit status) on the candidate commit; `--error` reports a gate that could not
run. Its body: commands/comment.py."""
from __future__ import annotations

import argparse

from .common import command


def add_comment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("comment", help="post or update the PR comment with the verdict")
    p.add_argument("--server", required=True)
    p.add_argument("--benchmark")
    p.add_argument("--baseline")
    p.add_argument("--run", type=int, action="append")
    p.add_argument("--experiment", metavar="ID", help="report this interleaved experiment")
    p.add_argument("--repo", required=True, metavar="OWNER/NAME")
    p.add_argument("--pr", type=int, help="the pull request to comment on")
    p.add_argument("--check", action="store_true", help="also create or update the check run "
                   "`perfwarden: BENCHMARK` on the candidate commit (a commit status where the "
                   "token may not write checks)")
    p.add_argument("--sha", help="the candidate commit for --check (default: the candidate "
                   "runs' commit)")
    p.add_argument("--metric", action="append", help="judge these metrics (as gate --metric)")
    p.add_argument("--threshold", action="append", metavar="METRIC=PCT",
                   help="as gate --threshold")
    p.add_argument("--vary", action="append", metavar="KEY")
    p.add_argument("--dashboard-url")
    p.add_argument("--error", metavar="MESSAGE", help="the gate could not run: post a comment "
                   "saying why and (with --check) a failed check titled `ERROR: <first line>`; "
                   "needs --benchmark, not --run")
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=command("comment", "cmd_comment"))
