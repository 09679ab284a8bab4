"""The benchmark overview: the API's benchmark list and the dashboard's index, written once."""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..errors import DomainError
from ..repositories import baselines as baseline_repo
from ..repositories import runs as runs_repo
from ..schemas import BenchmarkSummary, GateIn
from . import verdicts
from .history import default_branch


def benchmarks(session: Session) -> list[BenchmarkSummary]:
    return [BenchmarkSummary(name=b.name, runs=n, latest=runs_repo.utc(t),
                             default_branch=default_branch(b))
            for b, n, t in runs_repo.benchmark_overview(session)]


def index_rows(session: Session, alpha: float = 0.05) -> list[dict[str, Any]]:
    """Per benchmark: run count, newest run, and the verdict of the newest default-branch run
    of a series its newest baseline covers (never a run of an unrelated series)."""
    overview = runs_repo.benchmark_overview(session)
    newest = baseline_repo.newest(session, [b.id for b, _, _ in overview])
    rows = []
    for b, count, latest in overview:
        if latest is None:
            continue
        base = newest.get(b.id)
        verdict = change = None
        shown = None
        if base is not None:
            keys = runs_repo.run_keys(session, list(base.run_ids))
            run = runs_repo.latest_run_in_series(session, b.id, {k[1] for k in keys.values()},
                                                 default_branch(b))
            if run is not None and run.id not in keys:
                shown = run
                try:
                    g = verdicts.gate(session, GateIn(benchmark=b.name, baseline=base.name,
                                                      run_ids=[run.id]), alpha)
                except DomainError:
                    g = None
                if g is not None:
                    verdict = g.verdict
                    tok = next((m for m in g.metrics if m.name == "tok_s"), None)
                    change = tok.delta_pct if tok else None
        if shown is None:
            shown = runs_repo.recent_runs(session, b.id, 1)[0]
        rows.append({"name": b.name, "runs": count, "baseline": base.name if base else None,
                     "verdict": verdict, "change": change, "latest": shown,
                     "started": shown.started_at.strftime("%Y-%m-%d %H:%M UTC")})
    return rows
