"""The embedded (SQLite) queue's units of work, each one short transaction: enqueue, claim,
renew the lease, finish, and retry with backoff. The worker loop is service/jobs/table.py."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..db import SessionFactory, transaction
from . import queries as repo


@dataclass(frozen=True)
class Claimed:
    id: int
    kind: str
    args: dict[str, Any]
    attempts: int
    max_attempts: int


def now() -> datetime:
    return datetime.now(timezone.utc)


def enqueue(sessions: SessionFactory, kind: str, args: dict[str, Any],
            coalesce: str | None, max_attempts: int, after_s: float = 0.0) -> bool:
    with transaction(sessions) as session:
        return repo.add(session, kind, args, coalesce, max_attempts, now(), after_s)


def claim(sessions: SessionFactory, worker: str, lease_s: float,
          kinds: list[str] | None = None) -> Claimed | None:
    with transaction(sessions) as session:
        job = repo.claim(session, worker, now(), lease_s, kinds)
        if job is None:
            return None
        return Claimed(job.id, job.kind, dict(job.args), job.attempts, job.max_attempts)


def renew(sessions: SessionFactory, job_id: int, worker: str, lease_s: float) -> bool:
    with transaction(sessions) as session:
        return repo.renew(session, job_id, worker, now() + timedelta(seconds=lease_s))


def finish(sessions: SessionFactory, job_id: int, worker: str, ok: bool,
           error: str | None = None) -> None:
    with transaction(sessions) as session:
        repo.finish(session, job_id, worker, "done" if ok else "failed", now(), error)


def retry(sessions: SessionFactory, job_id: int, worker: str, delay_s: float,
          error: str) -> None:
    """Back to waiting after `delay_s`; a job that a newer waiting job of the same key
    supersedes (it does the same work) is done instead."""
    with transaction(sessions) as session:
        job = repo.get(session, job_id)
        if job is not None and repo.superseded(session, job):
            repo.finish(session, job_id, worker, "done", now(), f"superseded; {error}"[:1000])
            return
        repo.retry_at(session, job_id, worker, now() + timedelta(seconds=delay_s), error[:1000])


def counts(sessions: SessionFactory) -> dict[str, int]:
    with transaction(sessions) as session:
        return repo.counts(session)
