"""PR comments the bot keeps up to date, and the runs a comment covers."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..runs.tables import Run
from ..traces.tables import TraceFile
from .tables import PrComment


def pr_context(session: Session, run_id: int) -> tuple[str, str, int, list[int]] | None:
    """(benchmark, repository, pr, the ids of that PR's runs at its newest commit) of a run that
    carries a repository and a PR; None otherwise. The newest commit is that of the PR's last
    run to arrive, whichever run asks: jobs for older runs of the PR, run late or side by side,
    post the same comment as the newest one's."""
    run = session.get(Run, run_id)
    if run is None or not run.repository or not run.pr:
        return None
    same_pr = (Run.repository == run.repository, Run.pr == run.pr,
               Run.benchmark_id == run.benchmark_id)
    commit = session.scalars(select(Run.commit).where(*same_pr).order_by(Run.id.desc())
                             .limit(1)).one()
    ids = [r for (r,) in session.execute(select(Run.id).where(*same_pr, Run.commit == commit))]
    return run.benchmark.name, run.repository, run.pr, ids


def save_comment(session: Session, repository: str, pr: int, benchmark: str, baseline: str,
                 comment_id: int, verdict: str, now: datetime) -> None:
    row = session.scalars(select(PrComment).filter_by(
        repository=repository, pr=pr, benchmark=benchmark, baseline=baseline)).first()
    if row is None:
        session.add(PrComment(repository=repository, pr=pr, benchmark=benchmark,
                              baseline=baseline, comment_id=comment_id, verdict=verdict,
                              updated_at=now))
    else:
        row.comment_id, row.verdict, row.updated_at = comment_id, verdict, now


def pending_traces(session: Session, run_ids: list[int]) -> dict[int, int]:
    """How many traces of each run are waiting for their analysis (runs with none left out)."""
    rows = session.execute(select(TraceFile.run_id).where(TraceFile.run_id.in_(run_ids),
                                                          TraceFile.state == "pending"))
    out: dict[int, int] = {}
    for (rid,) in rows:
        out[rid] = out.get(rid, 0) + 1
    return out


def commented_run(session: Session, trace_id: int, baseline: str) -> int | None:
    """The trace's run, when a PR comment against `baseline` was already posted for the run's
    PR and benchmark; None otherwise."""
    trace = session.get(TraceFile, trace_id)
    run = session.get(Run, trace.run_id) if trace is not None else None
    if run is None or not run.repository or not run.pr:
        return None
    posted = session.scalars(select(PrComment.id).filter_by(
        repository=run.repository, pr=run.pr, benchmark=run.benchmark.name,
        baseline=baseline)).first()
    return run.id if posted is not None else None
