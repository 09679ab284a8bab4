"""The service posts by itself when a run arrives carrying `repository` and `pr` and the server
holds a GitHub token (PERFWARDEN_GITHUB_TOKEN) and a baseline name (PERFWARDEN_BOT_BASELINE):
the ingest queues `post_for_run` as a durable job (service/jobs)."""
from __future__ import annotations

import logging
from datetime import datetime, timezone

from sqlalchemy import select

from ..db import transaction
from ..errors import DomainError
from ..models import PrComment, Run
from ..schemas import GateIn
from ..usecases.verdicts import compare
from .github import GitHub
from .markdown import marker, render

log = logging.getLogger("perfwarden.bot")


def post_for_run(sessions, settings, run_id: int) -> None:  # noqa: ANN001 - sessionmaker, Settings
    """Post or edit the PR's comment for the run's PR and commit (found again by its marker,
    so a job run twice after a crash still leaves one comment). A GitHub failure raises
    GitHubError: the job is tried again."""
    s = settings
    with transaction(sessions) as session:
        run = session.get(Run, run_id)
        if run is None or not run.repository or not run.pr:
            return
        bench = run.benchmark.name
        ids = [r for (r,) in session.execute(select(Run.id).where(
            Run.repository == run.repository, Run.pr == run.pr,
            Run.benchmark_id == run.benchmark_id, Run.commit == run.commit))]
        try:
            cmp = compare(session, GateIn(benchmark=bench, baseline=s.bot_baseline,
                                          run_ids=ids), s.gate_alpha)
        except DomainError as e:
            log.warning("PR comment skipped for run %s: %s", run_id, e.message)
            return
        repo, pr = run.repository, run.pr
    body = render(cmp, s.dashboard_url)
    with GitHub(s.github_token.get_secret_value(), s.github_api_url) as gh:
        comment, _ = gh.upsert(repo, pr, marker(bench, s.bot_baseline), body)
    with transaction(sessions) as session:
        row = session.scalars(select(PrComment).filter_by(
            repository=repo, pr=pr, benchmark=bench, baseline=s.bot_baseline)).first()
        now = datetime.now(timezone.utc)
        if row is None:
            session.add(PrComment(repository=repo, pr=pr, benchmark=bench,
                                  baseline=s.bot_baseline, comment_id=int(comment["id"]),
                                  verdict=cmp.verdict, updated_at=now))
        else:
            row.comment_id, row.verdict, row.updated_at = int(comment["id"]), cmp.verdict, now
