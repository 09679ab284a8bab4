"""Engine and sessions. SQLite (embedded default) and PostgreSQL behave the same to callers."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

# The unit-of-work types the use cases are handed. Only repositories, migrations and this
# composition root import SQLAlchemy (tests/test_layering.py); use cases name these instead.
SessionFactory = sessionmaker[Session]
__all__ = ["Session", "SessionFactory", "make_engine", "session_factory", "transaction"]


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_con, _):  # noqa: ANN001
            cur = dbapi_con.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    # No server-side prepared statements: psycopg prepares a query after 5 uses, and the plan
    # PostgreSQL then caches for the connection's life was chosen for the tables as they were
    # (an empty `runs` gives a sequential scan, kept as the history grows to millions of rows
    # wherever nothing runs ANALYZE). Each statement is planned for the tables as they are.
    args = {"prepare_threshold": None} if make_url(url).get_driver_name() == "psycopg" else {}
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20,
                         connect_args=args)


def session_factory(engine: Engine) -> SessionFactory:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def transaction(factory: SessionFactory) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error (nothing half-stored)."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
