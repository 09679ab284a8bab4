"""A benchmark's history: per-run figures by series, change points, noise (the dashboard's
pages: usecases/pages.py). History reads one branch (spec/api.md): the benchmark's default
branch unless asked otherwise, by the one history rule of spec/api.md, History one rule
(runs/queries_filter.filter_runs: no pull-request runs, no experiment arms, no bisect runs); a
record posted twice counts once."""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NotRequired, Protocol, TypedDict

from collectors.metrics import threshold_pct

from .. import readcache
from ..baselines import named as baselines
from ..db import Session
from ..errors import NotFound
from ..repositories import series as series_repo
from ..repositories import summaries as summary_repo
from ..runs import queries as runs_repo
from ..stats import history as hstats
from . import queries as hist_repo
from .schemas import ChangePointOut, ChangePointsOut, NoiseOut, NoiseRow, SeriesChangePoints

DEFAULT_BRANCH = "main"
CHANGES = "changepoints"  # the stored summary of a metric's change points (usecases/summaries)
ALL_BRANCHES = "*"  # the dashboard's "every branch and PR" filter


class BenchmarkRow(Protocol):
    """What the use cases read of a stored benchmark."""

    id: int
    name: str
    default_branch: str | None
    bisect_command: str | None


def benchmarks(session: Session) -> list[BenchmarkRow]:
    """Every benchmark, newest run first."""
    return [b for b, _, _ in runs_repo.benchmark_overview(session)]


def get_benchmark(session: Session, name: str) -> BenchmarkRow:
    bench = runs_repo.benchmark(session, name)
    if bench is None:
        raise NotFound(f"benchmark {name!r} not found", "benchmark")
    return bench


def default_branch(bench: BenchmarkRow) -> str:
    return bench.default_branch or DEFAULT_BRANCH


def patch_benchmark(session: Session, name: str, default_branch: str | None,
                    bisect_command: str | None) -> BenchmarkRow:
    """`PATCH /api/v1/benchmarks/{name}`: its default branch and the command its alerts'
    `perfwarden bisect` line runs ("" clears it)."""
    bench = get_benchmark(session, name)
    runs_repo.set_benchmark(session, bench.id, default_branch,
                            None if bisect_command is None else bisect_command.strip())
    return bench


class HistoryRun(TypedDict):
    """One run of a series' history: its figures for the metric asked."""

    id: int
    started_at: str | None
    commit: str | None
    label: str | None
    branch: str | None
    experiment: str | None
    n: int
    mean: float
    median: float
    stdev: float | None


class SeriesHistory(TypedDict):
    """One series (a config on a GPU model and count) and its runs, oldest first."""

    series_id: int
    config: dict[str, Any]
    gpu: str
    gpu_count: int
    runs: list[HistoryRun]
    name: NotRequired[str]  # the series' names on a page (the dashboard adds them)
    label: NotRequired[str]


PAGE = 5000  # runs one statement of a whole-history read holds


def series_runs(session: Session, bench: BenchmarkRow, metric: str, series_id: int | None = None,
             limit: int | None = 5000, since: datetime | None = None,
             until: datetime | None = None, branch: str | None = None, label: str | None = None,
             run_ids: list[int] | None = None) -> list[SeriesHistory]:
    """The newest `limit` runs' figures by series; `limit=None`: every run of the history,
    read in pages of PAGE (the change points and alerts judge the whole history)."""
    branch = branch or default_branch(bench)
    filters: dict[str, Any] = dict(
        label=label, history_branch=None if branch == ALL_BRANCHES or run_ids is not None
        else branch, series_id=series_id, since=since, until=until, run_ids=run_ids)
    rows = hist_repo.history_rows(session, bench.id, metric, limit, **filters) \
        if limit is not None else hist_repo.every_history_row(session, bench.id, metric, PAGE,
                                                               **filters)
    series = series_repo.series_rows(session, {r.series_id for r in rows})
    return fold(rows, {i: SeriesHistory(series_id=x.id, config=x.config, gpu=x.gpu,
                                        gpu_count=x.gpu_count, runs=[])
                       for i, x in series.items()})


def fold(rows: Sequence[Any], series: Mapping[int, SeriesHistory]) -> list[SeriesHistory]:
    """History rows (newest first, with their metric figures) folded into their series, oldest
    first; a record posted twice counts as its first post."""
    out: dict[int, SeriesHistory] = {}
    seen: set[str] = set()
    for r in reversed(rows):
        if r.body_sha256 in seen:
            continue
        seen.add(r.body_sha256)
        entry = out.setdefault(r.series_id, SeriesHistory(**{**series[r.series_id], "runs": []}))
        entry["runs"].append(HistoryRun(
            id=r.id, started_at=runs_repo.utc(r.started_at), commit=r.commit, label=r.label,
            branch=r.branch, experiment=r.experiment_id, n=r.n, mean=r.mean, median=r.median,
            stdev=r.stdev))
    return list(out.values())


def recent_means(session: Session, bench: BenchmarkRow, pairs: Sequence[tuple[int, str]],
                 exclude: set[int], limit: int, since: dict[tuple[int, str], datetime] | None = None
                 ) -> dict[tuple[int, str], list[float]]:
    """Run means of the newest `limit` runs of each (series, metric) pair's default-branch
    history (not the runs in `exclude`), oldest first: the run-to-run spread of spec/api.md, Few
    baseline runs, in
    one query for every pair of a request."""
    return hist_repo.recent_means(session, bench.id, pairs, default_branch(bench), exclude, limit,
                                  since)


def changepoints(session: Session, bench_name: str, metric: str,
                 branch: str | None = None) -> ChangePointsOut:
    """Change points of each series of one branch's history. Kept per revision of the
    benchmark's runs (readcache), and for the default branch the one the summaries job stored
    when the runs arrived is read when it covers the runs of now, so a read after an ingest
    fits nothing where the job has run."""
    bench = get_benchmark(session, bench_name)
    resolved = branch or default_branch(bench)
    revision = runs_repo.fingerprint(session, bench.id)
    key = ("changepoints", str(session.get_bind().engine.url), bench.id, metric, resolved,
           revision)
    if resolved == default_branch(bench):
        stored = summary_repo.get(session, bench.id, CHANGES, metric)
        if stored is not None and (stored.runs, stored.last_run_id) == revision \
                and stored.body.get("branch") == resolved:
            return readcache.cached(key, lambda: ChangePointsOut.model_validate(stored.body)) \
                .model_copy(deep=True)
    return readcache.cached(key, lambda: _fit_changepoints(session, bench, metric, resolved)) \
        .model_copy(deep=True)


def _fit_changepoints(session: Session, bench: BenchmarkRow, metric: str, branch: str
                      ) -> ChangePointsOut:
    """Every run's mean of the branch's history in one read, a record posted twice
    counted as its first post, folded per series into arrays; only a change point's run is
    turned into its fields."""
    rows = hist_repo.history_means(session, bench.id, metric,
                                   None if branch == ALL_BRANCHES else branch)
    seen: set[str] = set()
    by_series: dict[int, tuple[list[int], list[float]]] = {}
    for sid, run_id, body, mean in rows:
        if body in seen:
            continue
        seen.add(body)
        ids, means = by_series.setdefault(sid, ([], []))
        ids.append(run_id)
        means.append(mean)
    thr = threshold_pct(metric)
    fits = {sid: (ids, readcache.fitted(("change_points", thr), ids, means,
                                        functools.partial(hstats.change_points, means, thr)))
            for sid, (ids, means) in by_series.items()}
    marks = hist_repo.run_marks(session, [ids[c.index] for ids, cps in fits.values() for c in cps])
    series = series_repo.series_rows(session, set(by_series))
    out = []
    for sid, (ids, cps) in fits.items():
        x = series[sid]
        out.append(SeriesChangePoints(
            series_id=sid, config=x.config, gpu=x.gpu, gpu_count=x.gpu_count,
            change_points=[ChangePointOut(index=c.index, before_mean=c.before_mean,
                                          after_mean=c.after_mean, delta_pct=c.delta_pct,
                                          run_id=ids[c.index],
                                          started_at=runs_repo.utc(marks[ids[c.index]][0]),
                                          commit=marks[ids[c.index]][1]) for c in cps]))
    return ChangePointsOut(benchmark=bench.name, metric=metric, branch=branch, series=out)


def noise(session: Session, bench_name: str, metric: str = "tok_s", branch: str | None = None,
          baseline: str | None = None) -> NoiseOut:
    """Spread per series of one branch's history, or of a baseline's runs."""
    bench = get_benchmark(session, bench_name)
    ids = baselines.resolve(session, bench.id, bench_name, baseline) if baseline else None
    rows = []
    for s in series_runs(session, bench, metric, branch=branch, run_ids=ids):
        figs = [hstats.RunFigure(r["n"], r["mean"], r["stdev"]) for r in s["runs"] if r["n"] >= 1]
        n = hstats.noise(figs)
        rows.append(NoiseRow(series_id=s["series_id"], config=s["config"], gpu=s["gpu"],
                             runs=n.runs, trials_per_run=n.trials_per_run, mean=n.mean,
                             run_to_run_cv_pct=n.run_to_run_cv_pct, trial_cv_pct=n.trial_cv_pct,
                             block_cv_pct=n.block_cv_pct, min_detectable_pct=n.min_detectable_pct,
                             min_detectable_pct_pooled=n.min_detectable_pct_pooled))
    return NoiseOut(benchmark=bench_name, metric=metric,
                    branch=None if baseline else (branch or default_branch(bench)),
                    baseline=baseline, series=rows)
