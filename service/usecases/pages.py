"""What the dashboard's benchmark and matrix pages show, as view models (no ORM object leaves
this module): indexed queries with bounded rows and the stored summaries of
usecases/summaries.py (change points, attribution); nothing is fitted on a page view."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import readcache
from ..baselines import queries as baseline_repo
from ..db import Session
from ..errors import NotFound
from ..history import queries as hist_repo
from ..history import reads as history
from ..history.reads import ALL_BRANCHES, BenchmarkRow, SeriesHistory, default_branch, series_runs
from ..repositories import series as series_repo
from ..repositories import summaries as summary_repo
from ..repositories import views as views_repo
from ..runs import queries as runs_repo
from . import summaries

RECENT = 25  # rows of the benchmark page's recent-runs table
TRIAL_RUNS = 300  # newest runs of a series whose trials the detail view draws
PANEL_RUNS = 100  # newest runs per series in the all-series panels
DETAIL_RUNS = 1000  # newest runs of the one-series view (since/until reach further back)


@dataclass(frozen=True)
class BaselineRef:
    name: str


@dataclass(frozen=True)
class RecentRun:
    id: int
    started: str  # "2026-12-01 13:05:00"
    label: str | None
    commit: str | None
    branch: str | None
    config: dict[str, Any]
    tok_s_mean: float | None


@dataclass
class BenchmarkView:
    """Everything the benchmark page draws. `history` and `panels` hold per-series dicts of
    plain values (series_id, config, gpu, gpu_count, runs: [{id, started_at, mean, ...}])."""

    history: list[SeriesHistory]
    all_series: list[SeriesHistory]
    baselines: list[BaselineRef]
    baseline: BaselineRef | None
    bands: dict[int, tuple[float, float, float]]
    changes: dict[int, list[dict[str, Any]]]
    changes_note: str  # why markers are missing or what they cover; "" when current
    unit: str
    recent: list[RecentRun]
    default_branch: str
    samples: dict[int, list[float]] = field(default_factory=dict)
    panels: dict[str, list[SeriesHistory]] = field(default_factory=dict)
    matrix: bool = False  # the matrix page has cells of more than one batch size
    empty_note: str = ""  # why the history shown has no runs, said once; "" when it has some


def _has_matrix(session: Session, bench: BenchmarkRow, all_series: list[SeriesHistory]) -> bool:
    """Do series of more than one batch size hold runs of the default branch's history (what
    the matrix page draws)?"""
    sized = {s["series_id"]: s["config"]["batch_size"] for s in all_series
             if "batch_size" in s["config"]}
    if len(set(sized.values())) < 2:
        return False
    rows = views_repo.latest_runs_per_series(session, bench.id, set(sized), default_branch(bench))
    return len({sized[r.series_id] for r in rows}) > 1


def _empty_note(main: list[SeriesHistory], recent: list[RecentRun], metric: str, home: str,
                branch: str | None, label: str | None) -> str:
    if any(h["runs"] for h in main):
        return ""
    what = f"label {label}" if label else f"branch {branch or home}"
    if not recent:
        return f"No runs of metric {metric} in the history of {what}."
    return (f"No runs of metric {metric} in the history of {what}. The history leaves out "
            "experiment arms, bisect runs and pull-request runs; the recent runs below are "
            "such runs or of other branches.")


def _baseline(session: Session, name: str, asked: str | None) -> tuple[list[Any], Any]:
    bases = baseline_repo.list_all(session, name)
    return bases, next((b for b in bases if b.name == asked), bases[0] if bases else None)


def _bands(session: Session, bench: BenchmarkRow, metric: str, run_ids: list[int]
           ) -> dict[int, tuple[float, float, float]]:
    """Per series the baseline's run means: (mean - 2 sd, mean, mean + 2 sd)."""
    bands: dict[int, tuple[float, float, float]] = {}
    for h in series_runs(session, bench, metric, run_ids=run_ids):
        means = [r["mean"] for r in h["runs"]]
        if len(means) >= 2:
            mu, sd = statistics.fmean(means), statistics.stdev(means)
            bands[h["series_id"]] = (mu - 2 * sd, mu, mu + 2 * sd)
        elif means:
            bands[h["series_id"]] = (means[0], means[0], means[0])
    return bands


def _changes(stored: summaries.StoredChanges, shown: list[SeriesHistory]
             ) -> dict[int, list[dict[str, Any]]]:
    """The stored change points of each shown series that fall on a shown run, indexed into
    the runs as shown."""
    out: dict[int, list[dict[str, Any]]] = {}
    for h in shown:
        pos = {r["id"]: i for i, r in enumerate(h["runs"])}
        out[h["series_id"]] = [{**c, "index": pos[c["run_id"]]}
                               for c in stored.by_series.get(h["series_id"], [])
                               if c["run_id"] in pos]
    return out


def _panels(session: Session, bench: BenchmarkRow, metric: str, branch: str | None,
            label: str | None, since: datetime | None, until: datetime | None,
            series: dict[int, SeriesHistory]) -> list[SeriesHistory]:
    """The newest PANEL_RUNS runs of each series, shaped as history.series_runs shapes them
    (oldest first; a record posted twice counts once)."""
    branch = branch or default_branch(bench)
    rows = views_repo.newest_per_series(
        session, bench.id, metric, PANEL_RUNS, label=label, since=since, until=until,
        history_branch=None if branch == ALL_BRANCHES else branch)
    out = history.fold(rows, series)
    return sorted(out, key=lambda e: e["series_id"])


def _recent(session: Session, bench_id: int, series_id: int | None) -> list[RecentRun]:
    """The newest runs of the benchmark, or of the one series shown."""
    return [RecentRun(r.id, r.started_at.strftime("%Y-%m-%d %H:%M:%S"), r.label, r.commit,
                      r.branch, r.config, r.mean)
            for r in views_repo.recent_runs(session, bench_id, RECENT, "tok_s", series_id)]


def benchmark_view(session: Session, name: str, metric: str, series_id: int | None,
                   branch: str | None, label: str | None, gpu: str | None,
                   since: datetime | None, until: datetime | None, baseline: str | None,
                   panel_metrics: tuple[str, ...], recompute: summaries.Recompute,
                   detail: bool = True) -> BenchmarkView:
    """_view, kept per revision of the benchmark's runs, its baselines and its stored change
    points (readcache): a view asked again before any of them changed reads only those."""
    bench = history.get_benchmark(session, name)
    stored = summary_repo.get(session, bench.id, summaries.CHANGES, metric)
    key = ("benchmark_view", str(session.get_bind().engine.url), bench.id, default_branch(bench),
           metric, series_id, branch, label, gpu, since, until, baseline, panel_metrics, detail,
           runs_repo.fingerprint(session, bench.id),
           tuple((b.id, b.name, b.updated_at) for b in baseline_repo.list_all(session, name)),
           stored and (stored.runs, stored.last_run_id, stored.computed_at))
    return readcache.cached(key, lambda: _view(
        session, name, metric, series_id, branch, label, gpu, since, until, baseline,
        panel_metrics, recompute, detail))


def _view(session: Session, name: str, metric: str, series_id: int | None,
          branch: str | None, label: str | None, gpu: str | None,
          since: datetime | None, until: datetime | None, baseline: str | None,
          panel_metrics: tuple[str, ...], recompute: summaries.Recompute,
          detail: bool = True) -> BenchmarkView:
    """The selected history with the baseline's band and the stored change points of the
    default branch's history; with `detail` (one series) the trial samples of its newest runs
    and small panels of other metrics too."""
    bench = history.get_benchmark(session, name)
    filters = dict(series_id=series_id, since=since, until=until, branch=branch, label=label)

    def hist(m: str) -> list[SeriesHistory]:
        h = series_runs(session, bench, m, limit=DETAIL_RUNS, **filters)  # type: ignore[arg-type]
        return [x for x in h if not gpu or x["gpu"] == gpu]

    all_series = [SeriesHistory(series_id=s.id, config=s.config, gpu=s.gpu,
                                gpu_count=s.gpu_count, runs=[])
                  for s in series_repo.series_of_benchmark(session, bench.id)]
    if detail:
        main = hist(metric)
    else:  # every series' newest runs, one bounded walk per series
        main = [h for h in _panels(session, bench, metric, branch, label, since, until,
                                   {s["series_id"]: s for s in all_series})
                if not gpu or h["gpu"] == gpu]
    bases, base = _baseline(session, name, baseline)
    home = default_branch(bench)
    changes: dict[int, list[dict[str, Any]]] = {}
    note = ""
    if (branch or home) == home and not label:
        stored = summaries.stored_changes(session, bench, metric, recompute) if main else None
        changes, note = (_changes(stored, main), stored.note) if stored else ({}, "")
    else:
        note = (f"change points are stored for the {home} history only; this view "
                f"({'label ' + label if label else 'branch ' + str(branch)}) shows none")
    view = BenchmarkView(
        history=main, all_series=all_series,
        baselines=[BaselineRef(b.name) for b in bases],
        baseline=BaselineRef(base.name) if base else None,
        bands=_bands(session, bench, metric, list(base.run_ids)) if base else {},
        changes=changes, changes_note=note, unit=hist_repo.unit_of(session, bench.id, metric),
        recent=_recent(session, bench.id, series_id), default_branch=home,
        matrix=_has_matrix(session, bench, all_series))
    view.empty_note = _empty_note(main, view.recent, metric, home, branch, label)
    if detail:
        shown = [r["id"] for h in main for r in h["runs"][-TRIAL_RUNS:]]
        view.samples = {rid: m.get(metric, []) for rid, m in
                        runs_repo.samples_of(session, shown, [metric]).items()}
        view.panels = {m: hist(m) for m in panel_metrics if m != metric}
    return view


def matrix_cells(session: Session, name: str, label: str | None,
                 baseline: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """One cell per batch-size series: by default the newest default-branch run (never a PR
    run), with `label` the newest run of that label; each with its change against the mean of
    the baseline's runs in that cell (the newest baseline, or `baseline`) where one exists, and
    whether the run is one of the baseline's. Returns the cells and the baseline's name."""
    bench = history.get_benchmark(session, name)
    bases = baseline_repo.list_all(session, name)
    base = next((b for b in bases if b.name == baseline), None) if baseline else \
        (bases[0] if bases else None)
    if baseline and base is None:
        raise NotFound(f"baseline {baseline!r} not found for benchmark {name!r}", "baseline")
    base_hist = series_runs(session, bench, "tok_s", run_ids=list(base.run_ids)) if base else []
    base_mean = {h["series_id"]: statistics.fmean(r["mean"] for r in h["runs"])
                 for h in base_hist if h["runs"]}
    if label:
        hist = series_runs(session, bench, "tok_s", label=label, branch=ALL_BRANCHES)
    else:
        hist = series_runs(session, bench, "tok_s")
    in_base = set(base.run_ids) if base else set()
    hist = [h for h in hist if "batch_size" in h["config"] and h["runs"]]
    latest = {h["series_id"]: h["runs"][-1] for h in hist}
    runs = runs_repo.runs_by_id(session, [r["id"] for r in latest.values()])
    cells = []
    for h in hist:
        cfg = h["config"]
        last = latest[h["series_id"]]
        det = runs[last["id"]].determinism or {}
        variant = " ".join(x for x in (f"tp{cfg.get('tp', '?')}", str(cfg.get("shared_experts", "")),
                                       "graphs" if cfg.get("cuda_graphs") else "eager",
                                       "deterministic" if cfg.get("deterministic") else "",
                                       h["gpu"]) if x)
        mean = last["mean"]
        ref = base_mean.get(h["series_id"])
        cv = 100.0 * last["stdev"] / last["mean"] if last["stdev"] is not None and last["mean"] \
            else None  # one trial: no spread to show
        cells.append({"variant": variant, "batch_size": cfg["batch_size"], "mean": mean,
                      "deterministic": bool(cfg.get("deterministic")),
                      "cv_pct": cv, "run_id": last["id"], "in_baseline": last["id"] in in_base,
                      "change_pct": None if not ref else 100.0 * (mean / ref - 1),
                      "det": f"{det.get('identical', '?')}/{det.get('repeats', '?')} identical"
                      if det else "no digests"})
    return cells, base.name if base else None
