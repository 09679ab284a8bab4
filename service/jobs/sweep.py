"""The start-up sweep of a worker (`perfwarden worker`, the in-process thread of `perfwarden
serve`, `drain`): every trace still `pending` gets its analysis job again. A job that still
waits stands for it (the same coalescing key); one that runs elsewhere meets a trace already
done and leaves it (the analysis is idempotent)."""
from __future__ import annotations

import logging

from sqlalchemy.orm import Session, sessionmaker

from ..config import Settings
from ..traces import sweep
from .queue import open_queue
from .tasks import enqueue_trace

log = logging.getLogger("perfwarden.jobs")


def requeue_pending(settings: Settings, sessions: sessionmaker[Session]) -> int:
    """Enqueue the analysis of every pending trace; how many there were."""

    ids = sweep.pending_traces(sessions)
    if not ids:
        return 0
    queue = open_queue(settings, sessions)
    try:
        for trace_id in ids:
            enqueue_trace(queue, trace_id)
    finally:
        queue.close()
    log.info("start-up sweep: %d pending trace(s) queued for analysis", len(ids))
    return len(ids)
