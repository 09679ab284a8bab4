"""The PostgreSQL queue: procrastinate (its schema comes in through migration 0007). One
procrastinate task per job kind, on its lane's queue (QUEUES: trace analysis on
`perfwarden-trace`, deliveries on `perfwarden-delivery`, every other kind on `perfwarden`),
each queue run by a worker of its own with its lane's concurrency; retries with the kind's doubling
backoff; a job whose worker was killed (no heartbeat for `job_lease_s`) is put back by the
next worker's sweep, until its kind's attempts are spent: then it fails for good, as one that
raised would (a trace is marked failed saying so). Tasks are plain functions; procrastinate
runs them in a thread."""
from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import procrastinate
from procrastinate import exceptions as pexc
from procrastinate.jobs import Status
from procrastinate.retry import BaseRetryStrategy, RetryDecision
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from ..config import Settings
from .tasks import KINDS, Context, Kind, delay_s, lane_workers, workers_died

log = logging.getLogger("perfwarden.jobs")
QUEUE = "perfwarden"
# lane (tasks.LANES) -> queue
QUEUES = {"trace": "perfwarden-trace", "default": QUEUE, "delivery": "perfwarden-delivery"}


def conninfo(url: str) -> str:
    """A libpq URL from the SQLAlchemy one (`postgresql+psycopg://...`)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class _Backoff(BaseRetryStrategy):
    def __init__(self, kind: Kind, settings: Settings):
        self.kind, self.settings = kind, settings

    def get_retry_decision(self, *, exception: BaseException, job: Any) -> RetryDecision | None:
        tries = job.attempts + 1  # this one included
        if tries >= self.kind.attempts(self.settings):
            return None
        wait = timedelta(seconds=delay_s(self.kind, self.settings, tries))
        return RetryDecision(retry_at=datetime.now(timezone.utc) + wait)


def make_app(settings: Settings, ctx: Context | None = None) -> procrastinate.App:
    """The procrastinate app with one task per kind; `ctx` is what a worker's tasks run with
    (None for an app that only defers)."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=conninfo(settings.database_url), min_size=1, max_size=8))
    for name, kind in KINDS.items():
        app.task(name=name, queue=QUEUES[kind.lane], pass_context=True,
                 retry=_Backoff(kind, settings))(_runner(name, kind, ctx))
    return app


def _runner(name: str, kind: Kind, ctx: Context | None):
    def run(jc: procrastinate.JobContext, **args: Any) -> None:
        assert ctx is not None, "a deferring app runs no task"
        assert jc.job is not None
        last = jc.job.attempts + 1 >= kind.attempts(ctx.settings)
        try:
            kind.run(ctx, args)
        except Exception as e:
            if _superseded(ctx.settings, jc.job.queueing_lock):
                # a waiting job with the same key does this work; a retry of this one could
                # not be queued beside it (the key's unique index) and would be left running
                log.warning("job %s %s failed (%s: %s); the waiting job with its key stands "
                            "for it", jc.job.id, name, type(e).__name__, str(e)[:300])
                return
            if last and kind.give_up is not None:
                kind.give_up(ctx, args, f"{type(e).__name__}: {e}"[:1000])
            raise

    run.__name__ = name
    return run


def _superseded(settings: Settings, lock: str | None) -> bool:
    """Whether a waiting job holds this coalescing key."""
    if lock is None:
        return False
    import psycopg

    with psycopg.connect(conninfo(settings.database_url)) as con:
        return con.execute("SELECT 1 FROM procrastinate_jobs WHERE queueing_lock = %s AND "
                           "status = 'todo'", (lock,)).fetchone() is not None


class PgQueue:
    """Defers from synchronous code (the API's thread pool, the CLI) through procrastinate's
    synchronous connector."""

    def __init__(self, settings: Settings):
        self.app = make_app(settings)
        self._lock = threading.Lock()
        self._open = False

    def enqueue(self, kind: str, args: dict[str, Any], coalesce: str | None = None,
                after_s: float = 0.0) -> bool:
        with self._lock:
            if not self._open:
                self.app.open()
                self._open = True
        try:
            when = datetime.now(timezone.utc) + timedelta(seconds=after_s) if after_s > 0 else None
            self.app.tasks[kind].configure(queueing_lock=coalesce, schedule_at=when).defer(**args)
        except pexc.AlreadyEnqueued:
            return False
        return True

    def close(self) -> None:
        with self._lock:
            if self._open:
                self.app.close()
                self._open = False


async def _sweep(app: procrastinate.App, settings: Settings, ctx: Context | None = None) -> int:
    """Put back the running jobs of workers that stopped beating (killed). Where a waiting job
    with the same coalescing key was queued meanwhile, that one stands for it: the stalled job
    is marked failed instead (a second waiting copy would break the key's unique index). A job
    whose workers died on each of its kind's attempts is failed for good, and its kind gives up
    (with `ctx`: a trace is marked failed), never put back again."""
    n = 0
    for job in await app.job_manager.get_stalled_jobs(
            seconds_since_heartbeat=settings.job_lease_s):
        kind = KINDS.get(job.task_name)
        tries = job.attempts + 1  # the run its worker died in included
        try:
            if kind is not None and tries >= kind.attempts(settings):
                err = workers_died(tries)
                log.warning("job %s %s: %s", job.id, job.task_name, err)
                await app.job_manager.finish_job(job, Status.FAILED, delete_job=False)
                if ctx is not None and kind.give_up is not None:
                    await asyncio.to_thread(kind.give_up, ctx, dict(job.task_kwargs), err)
                n += 1
                continue
            try:
                await app.job_manager.retry_job(job, retry_at=datetime.now(timezone.utc))
            except pexc.UniqueViolation:
                log.warning("job %s %s: its worker stopped; a waiting job with the same key "
                            "stands for it", job.id, job.task_name)
                await app.job_manager.finish_job(job, Status.FAILED, delete_job=False)
            else:
                log.warning("job %s %s: its worker stopped; running it again", job.id,
                            job.task_name)
        except pexc.ConnectorException as e:  # another worker's sweep took it first
            log.info("job %s %s: left to another worker's sweep (%s)", job.id, job.task_name, e)
            continue
        n += 1
    return n


async def _work(settings: Settings, ctx: Context, wait: bool, stop: threading.Event | None,
                signals: bool, then: Callable[[], Any] | None) -> None:
    app = make_app(settings, ctx)
    lease = settings.job_lease_s
    async with app.open_async():
        await _sweep(app, settings, ctx)  # the killed workers' jobs first, then `then` (the start-up
        if then is not None:      # sweep of pending traces), so these stand for their traces
            await asyncio.to_thread(then)
        stop = stop or threading.Event()
        if signals:  # one handler for the lanes' workers: a signal stops them all
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
        # a worker per lane; a job that was queued before the lanes (a trace analysis on
        # `perfwarden`) is run where it waits
        workers = [asyncio.create_task(app.run_worker_async(
            queues=[QUEUES[lane]], wait=wait, install_signal_handlers=False, concurrency=n,
            name=f"perfwarden-{lane}", update_heartbeat_interval=max(0.2, lease / 4),
            stalled_worker_timeout=lease, fetch_job_polling_interval=settings.job_poll_s,
            listen_notify=True, delete_jobs="successful"))
            for lane, n in lane_workers(settings).items()]
        while not all(w.done() for w in workers):
            await asyncio.wait(workers, timeout=min(lease / 2, 1.0))
            if stop.is_set():
                for w in workers:
                    w.cancel()
                break
            await _sweep(app, settings, ctx)
        for w in workers:
            try:
                await w
            except asyncio.CancelledError:
                pass


def run_worker(settings: Settings, sessions: sessionmaker[Session], wait: bool = True,
               stop: threading.Event | None = None, signals: bool = True,
               then: Callable[[], Any] | None = None) -> None:
    """Run the worker; `then` runs once, after the killed workers' jobs are put back."""
    ctx = Context(settings, sessions, PgQueue(settings))
    try:
        asyncio.run(_work(settings, ctx, wait, stop, signals, then))
    finally:
        ctx.queue.close()


def pending(settings: Settings) -> int:
    """Jobs waiting or running on the lanes' queues."""
    import psycopg

    with psycopg.connect(conninfo(settings.database_url)) as con:
        row = con.execute("SELECT count(*) FROM procrastinate_jobs WHERE queue_name = ANY(%s) "
                          "AND status IN ('todo', 'doing')", (list(QUEUES.values()),)).fetchone()
    return int(row[0]) if row else 0
