"""Storing a run record: one transaction, retried on a concurrent first use of a key or series."""
from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ..db import transaction
from ..repositories import runs as runs_repo
from ..schemas import RunIn

ATTEMPTS = 3


def store_run(sessions: sessionmaker[Session], run: RunIn) -> tuple[int, bool]:
    """(id, created). The same idempotency key with the same body gives the first run's id;
    with another body, Conflict. Nothing is stored from a rejected record."""
    digest = runs_repo.body_hash(run)
    for attempt in range(ATTEMPTS):
        try:
            with transaction(sessions) as session:
                # the first try does not look the key up: a reused key fails on its unique
                # constraint and the retry looks it up (a round trip saved per new run)
                return runs_repo.create_run(session, run, digest, check_key=attempt > 0)
        except IntegrityError:  # a concurrent request stored the same key or series first
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
