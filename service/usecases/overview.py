"""The benchmark overview: the API's benchmark list and the dashboard's index, written once."""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .. import readcache
from ..alerts import lifecycle
from ..curations import queries as curation_repo
from ..db import Session
from ..format import series_label
from ..history.reads import default_branch
from ..repositories import summaries as summary_repo
from ..repositories import views as views_repo
from ..runs import queries as runs_repo
from ..schemas import BenchmarkSummary
from . import standing, summaries


def benchmarks(session: Session) -> list[BenchmarkSummary]:
    return [BenchmarkSummary(name=b.name, runs=n, latest=runs_repo.utc(t),
                             default_branch=default_branch(b), bisect_command=b.bisect_command)
            for b, n, t in runs_repo.benchmark_overview(session)]


def _latest_change_point(row: Any) -> dict[str, Any] | None:
    """The newest change point of a stored change-points summary of the tok/s history (never
    fitted here)."""
    cp: dict[str, Any] | None = None
    for s in row.body["series"] if row is not None else []:
        for c in s["change_points"]:
            if cp is None or (c.get("started_at") or "") > str(cp["started_at"] or ""):
                cp = {"series": series_label({**s["config"], "gpu": s["gpu"],
                                              "gpu_count": s["gpu_count"]}),
                      "delta_pct": c["delta_pct"], "run_id": c["run_id"],
                      "started_at": c.get("started_at"), "commit": c.get("commit")}
    return cp


@dataclass(frozen=True)
class RunRef:
    """A run as a page names it."""

    id: int
    label: str | None
    commit: str | None
    started: str  # "2026-12-01 13:05 UTC"


@dataclass(frozen=True)
class IndexRow:
    name: str
    runs: int
    baseline: str | None
    series_verdicts: list[dict[str, Any]]
    counts: dict[str, int]
    no_verdict: str | None
    open_alerts: int
    change_point: dict[str, Any] | None
    latest: RunRef

    @property
    def started(self) -> str:
        return self.latest.started


BUDGET_S = 0.25  # gates one index view may run for standings that are missing or stale
QUEUED_PER_VIEW = 25  # summary refreshes one index view may queue


def _standing(session: Session, b: Any, base: Any, stored: Any, alpha: float,
              revision: tuple[int, int], curated: tuple[int, int] | None, deadline: float,
              queue: Callable[[], None]) -> tuple[list[dict[str, Any]], str | None]:
    """The stored standing when current; else judged now while the view's budget lasts (and
    stored); else the stored one said as stale, or none yet, with a refresh queued."""
    if standing.current(stored, b, base, alpha, revision, curated):
        return stored.body["series_verdicts"], stored.body["no_verdict"]
    if time.monotonic() < deadline:
        body = standing.refresh(session, b, base, alpha, revision)
        return body["series_verdicts"], body["no_verdict"]
    queue()
    if stored is not None and stored.body.get("judged_with", {}).get("baseline_id") == base.id:
        since = revision[0] - stored.runs
        return stored.body["series_verdicts"], (
            f"as of {stored.runs:,} runs; " + (f"{since:+,} since" if since else
                                               "curations changed since") +
            ", a refresh is queued")
    return [], "verdicts being computed (a job is queued); reload in a moment"


class _Refreshes:
    """The summary refreshes one index view queues: one per revision of a benchmark's runs and
    process, however many views, and at most QUEUED_PER_VIEW per view (the next views queue the
    rest)."""

    def __init__(self, recompute: summaries.Recompute, db: str):
        self.recompute, self.db, self.queued = recompute, db, 0

    def __call__(self, b: Any, revision: tuple[int, ...]) -> None:
        if self.queued >= QUEUED_PER_VIEW:
            return
        fresh: list[int] = []

        def queue() -> bool:
            fresh.append(1)
            self.recompute(b.name, [])
            return True

        readcache.cached(("queued", self.db, b.id, revision), queue)
        self.queued += len(fresh)


@dataclass(frozen=True)
class IndexPage:
    """One page of the index: its rows, and how many benchmarks match in all."""

    rows: list[IndexRow]
    total: int


def index_page(session: Session, recompute: summaries.Recompute, alpha: float = 0.05,
               offset: int = 0, limit: int | None = None, match: str | None = None,
               only: str | None = None) -> IndexPage:
    """Per benchmark, newest run first: run count and newest run; the series verdicts of its
    newest baseline (usecases/standing: stored per revision of its runs, no gate per view); open
    alerts; the latest stored change point of its tok/s history. `match`: the benchmarks whose
    name holds it (any case); `offset`/`limit`: the page of those; `only`: that benchmark's row
    alone (its own page). A fixed number of statements for any number of benchmarks, and work
    only for the page's."""
    listed = [b for b in views_repo.overview(session, only) if b.latest is not None
              and (not match or match.casefold() in b.name.casefold())]
    page = listed[offset:None if limit is None else offset + limit]
    ids = [b.id for b in page]
    newest = views_repo.newest_baselines(session, ids)
    open_alerts = lifecycle.open_counts(session)
    shown_runs = views_repo.newest_runs(session, ids)
    stored = summary_repo.every(session, (standing.VERDICTS, summaries.CHANGES), standing.METRIC,
                                ids)
    curated = curation_repo.in_force_marks(session, ids, datetime.now(timezone.utc))
    deadline = time.monotonic() + BUDGET_S
    queue_once = _Refreshes(recompute, str(session.get_bind().engine.url))
    rows = []
    for b in page:
        base, count = newest.get(b.id), b.runs
        revision = (b.runs, b.last_run_id or 0)
        series_verdicts, no_verdict = _standing(
            session, b, base, stored.get((b.id, standing.VERDICTS)), alpha, revision,
            curated.get(b.id), deadline,
            functools.partial(queue_once, b, (*revision, *curated.get(b.id, (0, 0))))
        ) if base is not None else ([], None)
        counts: dict[str, int] = {}
        for v in series_verdicts:
            counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
        changes = stored.get((b.id, summaries.CHANGES))
        if changes is None or (changes.runs, changes.last_run_id) != revision \
                or changes.body.get("branch") != default_branch(b):
            queue_once(b, revision)
        shown = shown_runs[b.id]
        rows.append(IndexRow(
            name=b.name, runs=count, baseline=base.name if base else None,
            series_verdicts=series_verdicts, counts=counts,
            no_verdict=no_verdict,
            open_alerts=open_alerts.get(b.id, 0),
            change_point=_latest_change_point(
                changes if changes is not None and changes.body.get("branch") ==
                default_branch(b) else None),
            latest=RunRef(shown.id, shown.label, shown.commit,
                          shown.started_at.strftime("%Y-%m-%d %H:%M UTC"))))
    return IndexPage(rows, len(listed))
