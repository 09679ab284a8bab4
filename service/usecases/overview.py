"""The benchmark overview: the API's benchmark list and the dashboard's index, written once."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..db import Session
from ..errors import DomainError
from ..format import series_label
from ..repositories import baselines as baseline_repo
from ..repositories import runs as runs_repo
from ..repositories import views as views_repo
from ..schemas import BenchmarkSummary, GateIn
from . import alerts, summaries, verdicts
from .history import default_branch


def benchmarks(session: Session) -> list[BenchmarkSummary]:
    return [BenchmarkSummary(name=b.name, runs=n, latest=runs_repo.utc(t),
                             default_branch=default_branch(b), bisect_command=b.bisect_command)
            for b, n, t in runs_repo.benchmark_overview(session)]


def _latest_change_point(session: Session, bench: Any, recompute: summaries.Recompute
                         ) -> dict[str, Any] | None:
    """The newest stored change point of the benchmark's tok/s history (never fitted here)."""
    stored = summaries.stored_changes(session, bench, "tok_s", recompute)
    cp: dict[str, Any] | None = None
    for sid, cps in stored.by_series.items():
        s = stored.series[sid]
        for c in cps:
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


ORDER = ("regression", "inconclusive", "improvement", "pass")


def _series_verdicts(session: Session, b: Any, count: int, base: Any, alpha: float
                     ) -> tuple[list[dict[str, Any]], str | None]:
    """For each series the baseline covers, the verdict of that series' newest default-branch
    run (one gate over all of them, never a run of an unrelated series), and why there is none,
    said as it is."""
    keys = runs_repo.run_keys(session, list(base.run_ids))
    latest_runs = views_repo.latest_runs_per_series(session, b.id, {k[1] for k in keys.values()},
                                                    default_branch(b))
    cand = [r for r in latest_runs if r.id not in keys]
    out: list[dict[str, Any]] = []
    no_verdict = None
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
            out.append({"series": series_label(m.series), "verdict": m.verdict,
                        "change": m.delta_pct, "run": by_series[m.series_id].id,
                        "reason": m.reason})
    others = count - len(keys)  # runs the baseline does not hold
    if not cand and others > 0:
        no_verdict = (f"no newer {default_branch(b)} run in the baseline's series; "
                      f"{others} other run{'s' if others != 1 else ''} in other series "
                      "or branches")
    elif cand and not out and no_verdict is None:
        no_verdict = "newer runs, but no tok/s verdict for them"
    return sorted(out, key=lambda v: (ORDER.index(v["verdict"]), v["series"])), no_verdict


def index_rows(session: Session, recompute: summaries.Recompute, alpha: float = 0.05
               ) -> list[IndexRow]:
    """Per benchmark: run count and newest run; the series verdicts of its newest baseline;
    open alerts; the latest stored change point of its tok/s history."""
    overview = runs_repo.benchmark_overview(session)
    newest = baseline_repo.newest(session, [b.id for b, _, _ in overview])
    open_alerts = alerts.open_counts(session)
    rows = []
    for b, count, latest in overview:
        if latest is None:
            continue
        base = newest.get(b.id)
        series_verdicts, no_verdict = _series_verdicts(session, b, count, base, alpha) \
            if base is not None else ([], None)
        counts: dict[str, int] = {}
        for v in series_verdicts:
            counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
        shown = runs_repo.recent_runs(session, b.id, 1)[0]
        rows.append(IndexRow(
            name=b.name, runs=count, baseline=base.name if base else None,
            series_verdicts=series_verdicts, counts=counts,
            no_verdict=no_verdict,
            open_alerts=open_alerts.get(b.id, 0),
            change_point=_latest_change_point(session, b, recompute),
            latest=RunRef(shown.id, shown.label, shown.commit,
                          shown.started_at.strftime("%Y-%m-%d %H:%M UTC"))))
    return rows
