"""Running jobs: `perfwarden worker` (a process), the API's in-process thread (SQLite default),
and `drain` (run what is queued, then return: seeding, tests)."""
from __future__ import annotations

import logging
import threading
import time

from sqlalchemy.orm import Session, sessionmaker

from ..config import Settings
from . import pg
from .sweep import requeue_pending
from .table import TableWorker, run_lanes
from .table import pending as table_pending

log = logging.getLogger("perfwarden.jobs")


def run(settings: Settings, sessions: sessionmaker[Session], wait: bool = True,
        stop: threading.Event | None = None, signals: bool = True, sweep: bool = True) -> None:
    """Run jobs until stopped (or, with wait=False, until none is due); first, with `sweep`,
    queue again the analysis of traces left pending (jobs/sweep.py; on PostgreSQL after the
    killed workers' jobs are put back)."""

    if settings.is_sqlite:
        if sweep:
            requeue_pending(settings, sessions)
        if wait:  # the lanes' workers side by side
            run_lanes(settings, sessions, stop or threading.Event())
            return
        w = TableWorker(settings, sessions)  # what is due now, every lane, here
        if stop is not None:
            w.stop = stop
        w.run(wait)
        return

    pg.run_worker(settings, sessions, wait=wait, stop=stop, signals=signals,
                  then=(lambda: requeue_pending(settings, sessions)) if sweep else None)


def pending(settings: Settings, sessions: sessionmaker[Session]) -> int:
    if settings.is_sqlite:
        return table_pending(sessions)

    return pg.pending(settings)


def drain(settings: Settings, sessions: sessionmaker[Session], timeout_s: float = 120) -> None:
    """Run jobs here until no job waits or runs (retries included: it waits out their backoff).
    Another worker may take some of them meanwhile; this waits for those too."""
    end = time.monotonic() + timeout_s
    first = True
    while True:
        run(settings, sessions, wait=False, signals=False, sweep=first)
        first = False
        if pending(settings, sessions) == 0:
            return
        if time.monotonic() > end:
            raise TimeoutError(f"jobs still queued after {timeout_s:.0f} s")
        time.sleep(min(0.1, settings.job_poll_s))


def start_thread(settings: Settings, sessions: sessionmaker[Session]
                 ) -> tuple[threading.Thread, threading.Event]:
    """The in-process worker of `perfwarden serve` (SQLite default): a daemon thread."""
    stop = threading.Event()

    def loop() -> None:
        try:
            run(settings, sessions, stop=stop, signals=False)
        except Exception:  # noqa: BLE001 - the API goes on; `perfwarden worker` can take over
            log.exception("the in-process job worker stopped")

    t = threading.Thread(target=loop, name="perfwarden-jobs", daemon=True)
    t.start()
    return t, stop
