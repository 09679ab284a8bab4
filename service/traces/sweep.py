"""What a starting worker picks up again: traces left `pending` whose analysis job was lost
(the database restored from a backup, the queue wiped)."""
from __future__ import annotations

from ..db import SessionFactory, transaction
from ..runs import queries as runs_repo


def pending_traces(sessions: SessionFactory) -> list[int]:
    with transaction(sessions) as session:
        return runs_repo.pending_trace_ids(session)
