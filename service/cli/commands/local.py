"""The server's settings and the local database, for the commands that run without `--server`
or that serve: a bad PERFWARDEN_* value, a missing or unmigrated database is one line."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from collectors.errors import CliError

from ...config import Settings
from ...db import SessionFactory, make_engine, session_factory, transaction
from ...errors import DomainError
from ...migrate import current, head

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

T = TypeVar("T")


def settings() -> Settings:
    """The settings from the environment; a bad PERFWARDEN_* value is one line, exit 2."""
    try:
        return Settings()
    except Exception as e:  # noqa: BLE001 - a bad environment variable: one line, exit 2
        raise CliError(f"bad PERFWARDEN_* setting: {str(e).splitlines()[0]}") from None


def local_session() -> SessionFactory:
    """A session on the configured database, which must exist and be migrated."""
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


def on_local(read: Callable[[Session], T]) -> T:
    """A use case on the local database, in one transaction; its domain error is one line."""
    with transaction(local_session()) as session:
        try:
            return read(session)
        except DomainError as e:
            raise CliError(e.message) from None
