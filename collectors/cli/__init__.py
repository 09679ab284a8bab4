"""The GPU-node commands: `collect decode`, `collect command`, `analyze`, `experiment`, `ingest`.

argparse (standard library) so these run on GPU images without extra packages; `perfwarden`
(service/cli/) builds the same parser, passes in its experiment judge, and adds the server
commands beside them. One module per command group: collect.py, analyze.py, experiment.py,
ingest.py; emit.py writes or posts the records; wait.py is `ingest --wait` (until the
server has analyzed the uploaded traces).
"""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import EXIT_ERROR, EXIT_USAGE, CliError
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


class Parser(argparse.ArgumentParser):
    """argparse with usage errors exiting 64 (EX_USAGE); every subcommand's parser is one too
    (add_subparsers makes its parsers of the parent's class), so a mistake in a subcommand's
    flags prints that subcommand's usage."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def version() -> str:
    """The installed package's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("perfwarden")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def build_parser(prog: str = "perfwarden", judging: Judging = ON_NODE
                 ) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The parser of the GPU-node commands; `judging` is the experiment's judge and printout
    (a GPU node's by default) and the subparsers take the caller's commands."""
    p = Parser(prog=prog, description="profiler-guided performance regression checks for LLM "
               "inference engines")
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="command", required=True)
    add_commands(sub, judging)
    return p, sub


def _leaf(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command that `args` chose: `baseline set`'s, not `perfwarden`'s."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return _leaf(chosen, args)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """parse_args, with an unknown flag reported by the subcommand that was given it (its usage,
    exit 64), not by the top-level parser."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        _leaf(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def dispatch(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    args = parse(parser, argv)
    try:
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os._exit(0)
    except Exception as e:  # noqa: BLE001 - never a traceback, never exit 1 from the CLI itself
        print(f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    parser, _ = build_parser()
    return dispatch(parser, argv)
