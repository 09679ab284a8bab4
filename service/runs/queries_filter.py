"""The run filters the API, the dashboard and the history share, THE history rule among them
(spec/api.md, History one rule), and commits that match both ways."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_

from .tables import Run


def filter_runs(q, label: str | None = None, branch: str | None = None, commit: str | None = None,
                series_id: int | None = None, since: datetime | None = None,
                until: datetime | None = None, history_branch: str | None = None,
                run_ids: list[int] | None = None, repository: str | None = None,
                pr: int | None = None, experiment: str | None = None, bisect: str | None = None):
    """The run filters the API, the dashboard and the history share (None or empty: no filter).

    `history_branch` selects one branch's history, THE history rule (spec/api.md, History one rule):
    runs of that branch (runs that name no branch count as the default branch's, as collectors
    without git metadata write them), never runs of a pull request, never experiment arms, never
    bisect runs. `commit` matches both ways
    (spec/api.md, Commits match both ways): the shorter of the given and the stored commit is a
    prefix of the longer and has at
    least 7 characters."""
    if label:
        q = q.where(Run.label == label)
    if branch:
        q = q.where(Run.branch == branch)
    if history_branch:
        q = q.where(Run.pr.is_(None), or_(Run.branch == history_branch, Run.branch.is_(None)),
                    Run.experiment_id.is_(None), Run.bisect_id.is_(None))
    if commit:
        q = q.where(commit_matches(commit))
    if bisect:
        q = q.where(Run.bisect_id == bisect)
    if run_ids is not None:
        q = q.where(Run.id.in_(run_ids))
    if repository:
        q = q.where(Run.repository == repository)
    if pr is not None:
        q = q.where(Run.pr == pr)
    if experiment:
        q = q.where(Run.experiment_id == experiment)
    if series_id is not None:
        q = q.where(Run.series_id == series_id)
    if since is not None:
        q = q.where(Run.started_at >= since)
    if until is not None:
        q = q.where(Run.started_at <= until)
    return q


MIN_COMMIT = 7


def commit_matches(commit: str):
    """Stored commits that `commit` names: it is a prefix of theirs, or theirs (of at least 7
    characters) is a prefix of it."""
    given = commit.lower()
    longer = Run.commit.startswith(given, autoescape=True) if len(given) >= MIN_COMMIT \
        else Run.commit == given
    prefixes = {given[:n] for n in range(MIN_COMMIT, len(given))}
    return or_(longer, Run.commit.in_(prefixes)) if prefixes else longer
