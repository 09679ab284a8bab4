"""The PR comment's bookkeeping for the bot (service/github/auto.py): the verdict a run's PR
comment shows (every run of that PR at its newest commit, against the bot's baseline), and the
comment id and verdict kept per (repository, PR, benchmark, baseline)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone

from collectors.verdicts import pending_note

from ..errors import DomainError
from ..gate.schemas import CompareOut, GateIn
from ..gate.verdicts import compare
from . import queries as repo

log = logging.getLogger("perfwarden.bot")


@dataclass(frozen=True)
class PrVerdict:
    benchmark: str
    repository: str
    pr: int
    comparison: CompareOut
    pending: str | None = None  # `profiler evidence pending: ...` while a trace is analyzed


def pr_verdict(session, run_id: int, baseline: str,  # noqa: ANN001 - Session
               alpha: float) -> PrVerdict | None:
    """None when the run carries no repository and PR, or when no verdict can be made (the
    reason is logged; the comment is skipped, not retried)."""
    ctx = repo.pr_context(session, run_id)
    if ctx is None:
        return None
    bench, repository, pr, ids = ctx
    try:
        cmp = compare(session, GateIn(benchmark=bench, baseline=baseline, run_ids=ids), alpha)
    except DomainError as e:
        log.warning("PR comment skipped for run %s: %s", run_id, e.message)
        return None
    return PrVerdict(bench, repository, pr, cmp, pending_note(repo.pending_traces(session, ids)))


def run_to_recomment(session, trace_id: int, baseline: str) -> int | None:  # noqa: ANN001
    """After a trace's analysis ends (done or failed): the run whose PR comment, already
    posted, is to be rendered again with the evidence; None when no comment was posted."""
    return repo.commented_run(session, trace_id, baseline)


def record_comment(session, v: PrVerdict, baseline: str,  # noqa: ANN001 - Session
                   comment_id: int) -> None:
    repo.save_comment(session, v.repository, v.pr, v.benchmark, baseline, comment_id,
                      v.comparison.verdict, datetime.now(timezone.utc))
