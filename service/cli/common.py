"""What the server-side commands share: the settings, `--server` requests (through the one API
client, collectors/record.py), exit codes."""
from __future__ import annotations

import os

from collectors.errors import (
    EXIT_DATAERR,
    EXIT_ERROR,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CliError,
)
from collectors.record import call

EXIT_PASS, EXIT_REGRESSION, EXIT_INCONCLUSIVE = 0, 1, 3
# every error's code (2 any other, 64 usage, 65 bad input, 69 unreachable; collectors/errors.py)
ERROR_CODES = frozenset({EXIT_ERROR, EXIT_USAGE, EXIT_DATAERR, EXIT_UNAVAILABLE})
EXIT_BISECT_ABORT = 128  # `git bisect run`: stop the bisect (an error of ours, not the commit's)


def settings():
    """The settings from the environment; a bad PERFWARDEN_* value is one line, exit 2."""
    from ..config import Settings

    try:
        return Settings()
    except Exception as e:  # noqa: BLE001 - a bad environment variable: one line, exit 2
        raise CliError(f"bad PERFWARDEN_* setting: {str(e).splitlines()[0]}") from None


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


def local_session():
    """A session on the configured database, which must exist and be migrated."""
    from ..db import make_engine, session_factory
    from ..migrate import current, head

    s = settings()
    if s.is_sqlite:
        path = s.database_url.split("///", 1)[-1]
        if path and path != ":memory:" and not os.path.exists(path):
            raise CliError(f"no database at {path}: give --server URL, or set "
                           "PERFWARDEN_DATABASE_URL")
    try:
        rev = current(s.database_url)
    except Exception as e:  # noqa: BLE001 - unreachable or not a database: one line
        raise CliError(f"database: {str(e).splitlines()[0]}") from None
    if rev != head():
        raise CliError(f"the database is at revision {rev or 'base'}, not {head()}: run "
                       "`perfwarden db upgrade`")
    return session_factory(make_engine(s.database_url))


def ask(server: str | None, path: str, params: dict, model, local):  # noqa: ANN001
    """A read from the server when one is given, else the same use case on the local database."""
    if server:
        return model.model_validate(api(server, "GET", path, params=params))
    from ..db import transaction
    from ..errors import DomainError

    with transaction(local_session()) as session:
        try:
            return local(session)
        except DomainError as e:
            raise CliError(e.message) from None
