"""The GPU-node commands: `collect decode`, `collect command`, `analyze`, `experiment`, `ingest`.

argparse (standard library) so these run on GPU images without extra packages; `perfwarden`
(service/cli.py) builds the same parser, passes in its experiment judge, and adds the server
commands beside them. One module per command group: collect.py, analyze.py, experiment.py,
ingest.py; emit.py writes or posts the records.
"""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import CliError
from ..experiment import Judging
from .analyze import add_analyze
from .collect import add_collect
from .experiment import ON_NODE, add_experiment
from .ingest import add_ingest


def add_commands(sub: argparse._SubParsersAction, judging: Judging = ON_NODE) -> None:
    add_collect(sub)
    add_analyze(sub)
    add_experiment(sub, judging)
    add_ingest(sub)


def build_parser(prog: str = "perfwarden", judging: Judging = ON_NODE
                 ) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The parser of the GPU-node commands; `judging` is the experiment's judge and printout
    (a GPU node's by default) and the subparsers take the caller's commands."""
    p = argparse.ArgumentParser(prog=prog, description="profiler-guided performance regression "
                                "checks for LLM inference engines")
    sub = p.add_subparsers(dest="command", required=True)
    add_commands(sub, judging)
    return p, sub


def dispatch(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os._exit(0)
    except Exception as e:  # noqa: BLE001 - never a traceback, never exit 1 from the CLI itself
        print(f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser, _ = build_parser()
    return dispatch(parser, argv)
