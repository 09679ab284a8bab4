"""The embedded queue: the `jobs` table through SQLAlchemy (SQLite default). A worker claims the
oldest due job of its lane with one UPDATE and a lease, renews the lease while the job runs, and
on failure puts it back with a doubling delay; a job whose worker was killed is taken over once
its lease runs out. `perfwarden serve` runs the lanes' workers in threads; `perfwarden worker`
runs them in a process of its own."""
from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from ..config import Settings
from . import units as usecase
from .tasks import KINDS, Context, delay_s, kinds_of, lane_workers, workers_died

log = logging.getLogger("perfwarden.jobs")


class TableQueue:
    def __init__(self, settings: Settings, sessions: sessionmaker[Session]):
        self.settings, self.sessions = settings, sessions

    def enqueue(self, kind: str, args: dict[str, Any], coalesce: str | None = None,
                after_s: float = 0.0) -> bool:
        return usecase.enqueue(self.sessions, kind, args, coalesce,
                               KINDS[kind].attempts(self.settings), after_s)

    def close(self) -> None:
        pass


class TableWorker:
    """Runs the jobs of one lane (tasks.LANES; None: every kind)."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session], name: str | None = None,
                 lane: str | None = None):
        self.settings, self.sessions = settings, sessions
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.kinds = kinds_of(lane) if lane is not None else None
        self.ctx = Context(settings, sessions, TableQueue(settings, sessions))
        self.stop = threading.Event()

    def run_one(self) -> bool:
        """Claim and run one due job; False when none is due."""
        lease = self.settings.job_lease_s
        job = usecase.claim(self.sessions, self.name, lease, self.kinds)
        if job is None:
            return False
        kind = KINDS.get(job.kind)
        if kind is None:
            usecase.finish(self.sessions, job.id, self.name, False, f"unknown job kind {job.kind!r}")
            return True
        if job.attempts > job.max_attempts:  # its workers kept dying on it
            err = workers_died(job.max_attempts)
            self._give_up(kind, job.args, err)
            usecase.finish(self.sessions, job.id, self.name, False, err)
            return True
        done = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(job.id, done), daemon=True)
        renewer.start()
        try:
            kind.run(self.ctx, job.args)
        except Exception as e:  # noqa: BLE001 - kept on the job, retried with backoff
            err = f"{type(e).__name__}: {e}"[:1000]
            if job.attempts >= job.max_attempts:
                log.warning("job %s %s failed for good: %s", job.id, job.kind, err)
                self._give_up(kind, job.args, err)
                usecase.finish(self.sessions, job.id, self.name, False, err)
            else:
                wait = delay_s(kind, self.settings, job.attempts)
                log.info("job %s %s failed (try %d), again in %.1f s: %s", job.id, job.kind,
                         job.attempts, wait, err)
                usecase.retry(self.sessions, job.id, self.name, wait, err)
        else:
            usecase.finish(self.sessions, job.id, self.name, True)
        finally:
            done.set()
            renewer.join()
        return True

    def _give_up(self, kind: Any, args: dict[str, Any], err: str) -> None:
        if kind.give_up is not None:
            try:
                kind.give_up(self.ctx, args, err)
            except Exception:  # noqa: BLE001 - the job is failed either way
                log.exception("marking a failed job's result failed")

    def _renew(self, job_id: int, done: threading.Event) -> None:
        lease = self.settings.job_lease_s
        while not done.wait(lease / 3):
            try:
                usecase.renew(self.sessions, job_id, self.name, lease)
            except Exception:  # noqa: BLE001 - a missed renewal: the next one tries again
                log.warning("renewing the lease of job %s failed", job_id)

    def run(self, wait: bool = True) -> None:
        """Run jobs until stopped (`wait`) or until none is due."""
        while not self.stop.is_set():
            try:
                ran = self.run_one()
            except Exception:  # noqa: BLE001 - e.g. the database is away: wait and go on
                log.exception("job worker: claiming a job failed")
                ran = False
            if not ran:
                if not wait:
                    return
                self.stop.wait(self.settings.job_poll_s)


def run_lanes(settings: Settings, sessions: sessionmaker[Session], stop: threading.Event) -> None:
    """Workers for every lane, each in a thread (Settings.trace_concurrency, job_concurrency),
    until `stop`."""
    threads = []
    for lane, n in lane_workers(settings).items():
        for i in range(n):
            w = TableWorker(settings, sessions, lane=lane)
            w.stop = stop
            t = threading.Thread(target=w.run, name=f"perfwarden-jobs-{lane}-{i}", daemon=True)
            t.start()
            threads.append(t)
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join()


def pending(sessions: sessionmaker[Session]) -> int:
    """Jobs waiting or running."""
    c = usecase.counts(sessions)
    return c.get("todo", 0) + c.get("doing", 0)
