"""The embedded queue's table (SQLite): add, claim with a lease, renew, finish, retry. Never
commits; each function is one short statement or two so the caller's transaction stays short."""
from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from .tables import Job


def add(session: Session, kind: str, args: dict, coalesce: str | None, max_attempts: int,
        now: datetime, after_s: float = 0.0) -> bool:
    """A new job due `after_s` seconds from now, or False when a waiting (todo) job holds the
    same coalescing key."""
    if coalesce is not None and session.scalar(select(Job.id).where(
            Job.coalesce_key == coalesce, Job.state == "todo")) is not None:
        return False
    session.add(Job(kind=kind, args=args, coalesce_key=coalesce, state="todo", attempts=0,
                    max_attempts=max_attempts, run_after=now + timedelta(seconds=after_s),
                    created_at=now))
    session.flush()
    return True


def claim(session: Session, worker: str, now: datetime, lease_s: float,
          kinds: Collection[str] | None = None) -> Job | None:
    """The oldest due job (of `kinds`, a lane's; None: any): waiting and due, or running under a
    lease that ran out (its worker died). One UPDATE, so two workers never take the same job."""
    due = select(Job.id).where(or_(
        (Job.state == "todo") & (Job.run_after <= now),
        (Job.state == "doing") & (Job.locked_until < now)))
    if kinds is not None:
        due = due.where(Job.kind.in_(list(kinds)))
    due = due.order_by(Job.id).limit(1)
    job_id = session.scalar(update(Job).where(Job.id == due.scalar_subquery()).values(
        state="doing", worker=worker, attempts=Job.attempts + 1,
        locked_until=now + timedelta(seconds=lease_s)).returning(Job.id))
    return session.get(Job, job_id, populate_existing=True) if job_id is not None else None


def renew(session: Session, job_id: int, worker: str, until: datetime) -> bool:
    """Extend the lease while the job runs; False when another worker took it over."""
    n = session.execute(update(Job).where(Job.id == job_id, Job.worker == worker,
                                          Job.state == "doing").values(locked_until=until))
    return bool(n.rowcount)  # type: ignore[attr-defined]


def finish(session: Session, job_id: int, worker: str, state: str, now: datetime,
           error: str | None = None) -> None:
    session.execute(update(Job).where(Job.id == job_id, Job.worker == worker).values(
        state=state, finished_at=now, locked_until=None, last_error=error))


def retry_at(session: Session, job_id: int, worker: str, when: datetime, error: str) -> None:
    session.execute(update(Job).where(Job.id == job_id, Job.worker == worker).values(
        state="todo", run_after=when, locked_until=None, last_error=error))


def counts(session: Session) -> dict[str, int]:
    return {s: n for s, n in session.execute(select(Job.state, func.count()).group_by(Job.state))}


def get(session: Session, job_id: int) -> Job | None:
    return session.get(Job, job_id)


def superseded(session: Session, job: Job) -> bool:
    """Whether a newer waiting job of the same coalesce key does this job's work."""
    if job.coalesce_key is None:
        return False
    return session.scalar(select(Job.id).where(
        Job.coalesce_key == job.coalesce_key, Job.state == "todo",
        Job.id != job.id)) is not None
