"""The benchmark overview: the API's benchmark list and the dashboard's index, written once."""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from ..errors import DomainError
from ..format import series_label
from ..repositories import baselines as baseline_repo
from ..repositories import runs as runs_repo
from ..schemas import BenchmarkSummary, GateIn
from . import alerts, history, verdicts
from .history import default_branch


def benchmarks(session: Session) -> list[BenchmarkSummary]:
    return [BenchmarkSummary(name=b.name, runs=n, latest=runs_repo.utc(t),
                             default_branch=default_branch(b), bisect_command=b.bisect_command)
            for b, n, t in runs_repo.benchmark_overview(session)]


_CP_CACHE: dict[tuple, dict[str, Any] | None] = {}


def _latest_change_point(session: Session, bench: Any, count: int, latest: Any
                         ) -> dict[str, Any] | None:
    """The newest change point of the benchmark's tok/s history. Kept per (database, benchmark,
    run count, newest run time and id, default branch): any new or deleted run, or a new default
    branch, gives another key, so a kept answer is never stale."""
    key = (str(session.get_bind().engine.url), bench.id, count, latest, default_branch(bench),
           *runs_repo.fingerprint(session, bench.id))
    if key in _CP_CACHE:
        return _CP_CACHE[key]
    cp: dict[str, Any] | None = None
    try:
        cps = history.changepoints(session, bench.name, "tok_s")
    except DomainError:
        cps = None
    for s in cps.series if cps else []:
        for c in s.change_points:
            if cp is None or (c.started_at or "") > str(cp["started_at"] or ""):
                cp = {"series": series_label({**s.config, "gpu": s.gpu, "gpu_count": s.gpu_count}),
                      "delta_pct": c.delta_pct, "run_id": c.run_id, "started_at": c.started_at,
                      "commit": c.commit}
    if len(_CP_CACHE) > 256:
        _CP_CACHE.clear()
    _CP_CACHE[key] = cp
    return cp


def index_rows(session: Session, alpha: float = 0.05) -> list[dict[str, Any]]:
    """Per benchmark: run count and newest run; for each series its newest baseline covers, the
    verdict of that series' newest default-branch run (one gate over all of them, never a run of
    an unrelated series); open alerts; the latest change point of its tok/s history."""
    overview = runs_repo.benchmark_overview(session)
    newest = baseline_repo.newest(session, [b.id for b, _, _ in overview])
    open_alerts = alerts.open_counts(session)
    rows = []
    for b, count, latest in overview:
        if latest is None:
            continue
        base = newest.get(b.id)
        series_verdicts: list[dict[str, Any]] = []
        no_verdict = None  # why there is no series verdict, said as it is
        if base is not None:
            keys = runs_repo.run_keys(session, list(base.run_ids))
            latest_runs = runs_repo.latest_runs_per_series(
                session, b.id, {k[1] for k in keys.values()}, default_branch(b))
            cand = [r for r in latest_runs if r.id not in keys]
            if cand:
                try:
                    g = verdicts.gate(session, GateIn(benchmark=b.name, baseline=base.name,
                                                      run_ids=[r.id for r in cand]), alpha)
                except DomainError as e:
                    g = None
                    no_verdict = f"no verdict: {e.message}"
                by_series = {r.series_id: r for r in cand}
                for m in g.metrics if g else []:
                    if m.name != "tok_s" or m.series_id not in by_series:
                        continue
                    series_verdicts.append({"series": series_label(m.series),
                                            "verdict": m.verdict, "change": m.delta_pct,
                                            "run": by_series[m.series_id].id,
                                            "reason": m.reason})
            others = count - len(keys)  # runs the baseline does not hold
            if not cand and others > 0:
                no_verdict = (f"no newer {default_branch(b)} run in the baseline's series; "
                              f"{others} other run{'s' if others != 1 else ''} in other series "
                              "or branches")
            elif cand and not series_verdicts and no_verdict is None:
                no_verdict = "newer runs, but no tok/s verdict for them"
        cp = _latest_change_point(session, b, count, latest)
        counts: dict[str, int] = {}
        for v in series_verdicts:
            counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
        worst = next((k for k in ("regression", "inconclusive", "improvement", "pass")
                      if counts.get(k)), None)
        shown = runs_repo.recent_runs(session, b.id, 1)[0]
        rows.append({"name": b.name, "runs": count, "baseline": base.name if base else None,
                     "series_verdicts": sorted(series_verdicts, key=lambda v: (
                         ["regression", "inconclusive", "improvement", "pass"].index(v["verdict"]),
                         v["series"])),
                     "counts": counts, "worst": worst, "no_verdict": no_verdict,
                     "open_alerts": open_alerts.get(b.id, 0), "change_point": cp,
                     "latest": shown, "started": shown.started_at.strftime("%Y-%m-%d %H:%M UTC")})
    return rows
