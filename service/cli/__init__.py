"""`perfwarden`: the collectors' commands (collect, analyze, experiment, ingest; collectors/cli/)
with the full install's experiment judge passed in, plus the server-side commands' parsers, one
module per group: server.py (serve, worker, db, tokens, seed), gate.py (gate), history.py (noise,
attribute), explain.py (explain), baseline.py (baseline), curate.py (curate), bisect.py
(bisect), comment.py (comment), experiment.py (the local judge of `experiment`); common.py holds
what they share (the `--server` client, exit codes, `command`).

The parsers import the standard library and the collectors alone; a command's body lives in
commands/ and imports the server's code at its top, loaded by `command` when the command runs,
so `perfwarden collect ...` runs on a GPU node that has only the collectors' dependencies.
"""
from __future__ import annotations

import argparse
import sys

from collectors.cli import build_parser, dispatch

from .baseline import add_baseline
from .bisect import add_bisect
from .comment import add_comment
from .common import ERROR_CODES, EXIT_BISECT_ABORT
from .curate import add_curate
from .experiment import JUDGING
from .explain import add_explain
from .gate import add_gate
from .history import add_history
from .server import add_server


def full_parser() -> argparse.ArgumentParser:
    """Every `perfwarden` command: the collectors' and the service's (the CLI reference in the
    docs is generated from this parser)."""
    parser, sub = build_parser(judging=JUDGING)
    add_server(sub)
    add_gate(sub)
    add_history(sub)
    add_explain(sub)
    add_baseline(sub)
    add_curate(sub)
    add_bisect(sub)
    add_comment(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = full_parser()
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["gate"] and "--bisect" in args_in:
        return _bisect_exit(parser, args_in)
    if args_in[:1] == ["bisect"] and "--step" in args_in:
        return _bisect_exit(parser, args_in)
    return dispatch(parser, args_in)


def _bisect_exit(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    """Under `git bisect run`, any error of the command itself, a usage error included, is
    128: git stops the bisect instead of blaming the commit (2 would read as "bad")."""
    try:
        rc = dispatch(parser, argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else EXIT_BISECT_ABORT
    return EXIT_BISECT_ABORT if rc in ERROR_CODES else rc


if __name__ == "__main__":
    sys.exit(main())
