"""What the server-side commands' parsers and bodies share: `--server` requests (through the one
API client, collectors/record.py), exit codes, and `command`, which loads a command's body when
the command runs."""
from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from collectors.errors import (
    EXIT_DATAERR,
    EXIT_ERROR,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
)
from collectors.record import call

EXIT_PASS, EXIT_REGRESSION, EXIT_INCONCLUSIVE = 0, 1, 3
# every error's code (2 any other, 64 usage, 65 bad input, 69 unreachable; collectors/errors.py)
ERROR_CODES = frozenset({EXIT_ERROR, EXIT_USAGE, EXIT_DATAERR, EXIT_UNAVAILABLE})
EXIT_BISECT_ABORT = 128  # `git bisect run`: stop the bisect (an error of ours, not the commit's)
COMMANDS = "service.cli.commands"  # the command bodies' package


def redact(url: str) -> str:
    """A database URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':')[0]}:***@{host}" if ":" in creds else url
    return url


def api(server: str, method: str, path: str, **kw) -> dict:
    """One request to `server` through the one client of the server's API (collectors/record.py,
    `call`): its JSON answer, or CliError with the server's one-line message."""
    return call(server, method, path, **kw)


def command(module: str, name: str) -> Callable[..., Any]:
    """`name` of service/cli/commands/`module`.py, loaded when it is called. The command bodies
    import the server's code and libraries at their top; the parsers name them through this,
    so `perfwarden collect ...` runs on a GPU node that has only the collectors' dependencies
    (tests/test_layering.py reads these calls as imports, and checks that each names a
    function of an existing module)."""

    def run(*args: Any, **kw: Any) -> Any:
        return getattr(import_module(f"{COMMANDS}.{module}"), name)(*args, **kw)

    run.__name__ = name
    return run
