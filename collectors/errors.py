"""The one user-facing error of every command line (collectors and service alike), and the exit
codes its kinds give, as sysexits.h numbers them: 64 a usage error (a flag missing, mistyped or
out of range), 65 bad input (a file or record that cannot be read, a request the server refused as
invalid or unknown), 69 a service that cannot be reached (the perfwarden server or GitHub down,
answering 5xx); 2 any other error. 0, 1 and 3 are verdicts (pass, regression, inconclusive)."""
from __future__ import annotations

EXIT_ERROR, EXIT_USAGE, EXIT_DATAERR, EXIT_UNAVAILABLE = 2, 64, 65, 69


class CliError(Exception):
    """A user-facing error: printed as one line, exit code `code` (2: any other error)."""

    code = EXIT_ERROR


class UsageError(CliError):
    """The command line itself is wrong: exit 64."""

    code = EXIT_USAGE


class BadInput(CliError):
    """A file, record or reference the command was given is wrong: exit 65."""

    code = EXIT_DATAERR


class Unreachable(CliError, RuntimeError):
    """A service (the perfwarden server, GitHub) cannot be reached or answers 5xx: exit 69. The
    message names its URL."""

    code = EXIT_UNAVAILABLE


class Refused(CliError, RuntimeError):
    """The server answered 4xx: bad input (65) for 400/404/409/413/422, else any other (2)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
        self.code = EXIT_DATAERR if status in (400, 404, 409, 413, 422) else EXIT_ERROR


def for_status(message: str, status: int) -> CliError:
    """The error of an HTTP answer `status` >= 400: 5xx unreachable, 4xx refused."""
    return Unreachable(message) if status >= 500 else Refused(message, status)
