"""Storing a run record: one transaction, retried on a concurrent first use of a key or series."""
from __future__ import annotations

import logging
from collections.abc import Callable

from ..db import Session, SessionFactory, transaction
from ..errors import Conflict, DomainError
from . import queries as runs_repo
from . import queries_ingest as ingest_repo
from .schemas import RunIn

ATTEMPTS = 3
log = logging.getLogger("perfwarden.ingest")


def store_run(sessions: SessionFactory, run: RunIn) -> tuple[int, bool]:
    """(id, created). The same idempotency key with the same body gives the first run's id;
    with another body, Conflict. Nothing is stored from a rejected record."""
    digest = ingest_repo.body_hash(run)
    for attempt in range(ATTEMPTS):
        try:
            with transaction(sessions) as session:
                # the first try does not look the key up: a reused key fails on its unique
                # constraint and the retry looks it up (a round trip saved per new run)
                return ingest_repo.create_run(session, run, digest, check_key=attempt > 0)
        except ingest_repo.RACE_ERRORS:  # a concurrent request stored the same key or series first
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def store_runs(sessions: SessionFactory, runs: list[RunIn],
               then: Callable[[Session, list[int]], None] | None = None) -> tuple[list[int], int]:
    """A batch: all or nothing, one transaction. Returns (ids in order, how many were new).
    A record whose idempotency key is stored (or earlier in the batch) with the same body gives
    that run's id; with another body, Conflict naming the record. `then` (given the session and
    the ids) stores what belongs to the runs in the same transaction."""
    digests = [ingest_repo.body_hash(r) for r in runs]
    for attempt in range(ATTEMPTS):
        try:
            with transaction(sessions) as session:
                ids, created = _store_all(session, runs, digests)
                if then is not None:
                    then(session, ids)
                return ids, created
        except ingest_repo.RACE_ERRORS:  # a concurrent request stored one of the keys or series first
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _store_all(session: Session, runs: list[RunIn], digests: list[str]) -> tuple[list[int], int]:
    known = runs_repo.keyed(session, [r.idempotency_key for r in runs if r.idempotency_key])
    ids: list[int | None] = []
    new: list[int] = []  # indexes of the records to store
    pending: dict[str, int] = {}  # key -> index of its first new record in this batch
    for i, (run, digest) in enumerate(zip(runs, digests)):
        key = run.idempotency_key
        if key and (key in known or key in pending):
            body = known[key][1] if key in known else digests[pending[key]]
            if body != digest:
                raise Conflict(f"runs[{i}].idempotency_key: already used with a different run body",
                               f"runs.{i}.idempotency_key", code="idempotency_conflict")
            ids.append(known[key][0] if key in known else -1 - pending[key])
            continue
        if key:
            pending[key] = i
        ids.append(None)
        new.append(i)

    def name_record(j: int, e: DomainError) -> None:
        i = new[j]
        e.message = f"runs[{i}].{e.message}"
        e.field = f"runs.{i}.{e.field}" if e.field else f"runs.{i}"

    stored = ingest_repo.create_runs(session, [runs[i] for i in new], [digests[i] for i in new],
                                   on_error=name_record) if new else []
    by_index = dict(zip(new, stored))
    out = [by_index[i] if v is None else (by_index[-1 - v] if v < 0 else v)
           for i, v in enumerate(ids)]
    return out, len(new)
