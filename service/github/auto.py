"""The service posts by itself when a run arrives carrying `repository` and `pr` and the server
holds a GitHub token (PERFWARDEN_GITHUB_TOKEN) and a baseline name (PERFWARDEN_BOT_BASELINE):
the ingest queues `post_for_run` as a durable job (service/jobs). It posts only to the
repositories of PERFWARDEN_GITHUB_REPOS: a run's `repository` is whatever its poster wrote."""
from __future__ import annotations

import logging
import threading

from ..db import transaction
from ..github_rest import GitHub
from .markdown import marker, render, with_pending
from .prcomments import pr_verdict, record_comment

log = logging.getLogger("perfwarden.bot")
_LOCKS: dict[tuple[str, int, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _pr_lock(repository: str, pr: int, benchmark: str) -> threading.Lock:
    """One PR comment posted at a time in this process (the API's worker thread beside `drain`
    or a second thread): without it, two first jobs of one PR both find no comment and both
    create one."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault((repository, pr, benchmark), threading.Lock())


def post_for_run(sessions, settings, run_id: int) -> None:  # noqa: ANN001 - sessionmaker, Settings
    """Post or edit the PR's comment for the run's PR at its newest commit (found again by its marker,
    so a job run twice after a crash still leaves one comment). A GitHub failure raises
    GitHubError: the job is tried again."""
    s = settings
    with transaction(sessions) as session:
        v = pr_verdict(session, run_id, s.bot_baseline, s.gate_alpha)
    if v is None:
        return
    why = s.github_refusal(v.repository)
    if why is not None:  # refused for good: never tried again
        log.warning("no PR comment for run %s: %s", run_id, why)
        return
    with _pr_lock(v.repository, v.pr, v.benchmark):
        with transaction(sessions) as session:  # again, under the lock: the newest runs
            v = pr_verdict(session, run_id, s.bot_baseline, s.gate_alpha) or v
        # while a trace is analyzed the comment says so; its job edits the comment when done
        body = with_pending(render(v.comparison, s.dashboard_url), v.pending,
                            "this comment is edited when they are")
        with GitHub(s.github_token.get_secret_value(), s.github_api_url) as gh:
            comment, _ = gh.upsert(v.repository, v.pr, marker(v.benchmark, s.bot_baseline), body)
        with transaction(sessions) as session:
            record_comment(session, v, s.bot_baseline, int(comment["id"]))
