"""A benchmark's history: per-run figures by series, change points, noise, the dashboard's
benchmark and matrix views. History reads one branch (spec/api.md v1.1): the benchmark's default
branch unless asked otherwise, by the one history rule of v1.2 item 5
(repositories/history.filter_runs: no pull-request runs, no experiment arms, no bisect runs); a
record posted twice counts once."""
from __future__ import annotations

import statistics
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session

from collectors.metrics import threshold_pct

from ..errors import NotFound
from ..repositories import baselines as baseline_repo
from ..repositories import history as hist_repo
from ..repositories import runs as runs_repo
from ..repositories import series as series_repo
from ..schemas import ChangePointOut, ChangePointsOut, NoiseOut, NoiseRow, SeriesChangePoints
from ..stats import history as hstats
from . import baselines

DEFAULT_BRANCH = "main"
ALL_BRANCHES = "*"  # the dashboard's "every branch and PR" filter


class BenchmarkRow(Protocol):
    """What the use cases read and set of a stored benchmark."""

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
    if default_branch is not None:
        bench.default_branch = default_branch
    if bisect_command is not None:
        bench.bisect_command = bisect_command.strip() or None
    session.flush()
    return bench


def series_runs(session: Session, bench: BenchmarkRow, metric: str, series_id: int | None = None,
             limit: int = 5000, since: datetime | None = None, until: datetime | None = None,
             branch: str | None = None, label: str | None = None,
             run_ids: list[int] | None = None) -> list[dict[str, Any]]:
    branch = branch or default_branch(bench)
    rows = hist_repo.history_rows(session, bench.id, metric, limit, label=label,
                                  history_branch=None if branch == ALL_BRANCHES or run_ids is not None
                                  else branch, series_id=series_id, since=since, until=until,
                                  run_ids=run_ids)
    series = series_repo.series_rows(session, {r.series_id for r in rows})
    out: dict[int, dict[str, Any]] = {}
    seen: set[str] = set()
    for r in reversed(rows):  # oldest first; a repeated record counts as its first post
        if r.body_sha256 in seen:
            continue
        seen.add(r.body_sha256)
        s = series[r.series_id]
        entry = out.setdefault(r.series_id, {"series_id": s.id, "config": s.config, "gpu": s.gpu,
                                             "gpu_count": s.gpu_count, "runs": []})
        entry["runs"].append({"id": r.id, "started_at": runs_repo.utc(r.started_at),
                              "commit": r.commit, "label": r.label, "branch": r.branch,
                              "experiment": r.experiment_id, "n": r.n,
                              "mean": r.mean, "median": r.median, "stdev": r.stdev})
    return list(out.values())


def recent_means(session: Session, bench: BenchmarkRow, series_id: int, metric: str,
                 exclude: set[int], limit: int) -> list[float]:
    """Run means of the newest `limit` runs of one series' default-branch history (not the runs
    in `exclude`), oldest first: the run-to-run spread of v1.2 item 2."""
    runs = [r for s in series_runs(session, bench, metric, series_id=series_id,
                                   limit=limit + len(exclude))
            for r in s["runs"] if r["id"] not in exclude]
    return [float(r["mean"]) for r in runs[-limit:]]


def changepoints(session: Session, bench_name: str, metric: str,
                 branch: str | None = None) -> ChangePointsOut:
    bench = get_benchmark(session, bench_name)
    thr = threshold_pct(metric)
    out = []
    for s in series_runs(session, bench, metric, branch=branch):
        runs = s["runs"]
        cps = hstats.change_points([r["mean"] for r in runs], thr)
        out.append(SeriesChangePoints(
            series_id=s["series_id"], config=s["config"], gpu=s["gpu"], gpu_count=s["gpu_count"],
            change_points=[ChangePointOut(index=c.index, before_mean=c.before_mean,
                                          after_mean=c.after_mean, delta_pct=c.delta_pct,
                                          run_id=runs[c.index]["id"],
                                          started_at=runs[c.index]["started_at"],
                                          commit=runs[c.index]["commit"]) for c in cps]))
    return ChangePointsOut(benchmark=bench_name, metric=metric,
                           branch=branch or default_branch(bench), series=out)


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


def benchmark_view(session: Session, name: str, metric: str, series_id: int | None,
                   branch: str | None, label: str | None, gpu: str | None,
                   since: datetime | None, until: datetime | None, baseline: str | None,
                   panel_metrics: tuple[str, ...], detail: bool = True) -> dict[str, Any]:
    """Everything the benchmark page draws: the selected history with the baseline's band and
    change points; with `detail` (one series) the trial samples of recent runs and small panels
    of other metrics too."""
    bench = get_benchmark(session, name)
    filters = dict(series_id=series_id, since=since, until=until, branch=branch, label=label)

    def hist(m: str) -> list[dict[str, Any]]:
        h = series_runs(session, bench, m, **filters)  # type: ignore[arg-type]
        return [x for x in h if not gpu or x["gpu"] == gpu]

    main = hist(metric)
    # the series menu: every series of the benchmark (one small query, no run rows)
    all_series = [{"series_id": s.id, "config": s.config, "gpu": s.gpu, "gpu_count": s.gpu_count,
                   "runs": []} for s in series_repo.series_of_benchmark(session, bench.id)]
    bases = baseline_repo.list_all(session, name)
    base = next((b for b in bases if b.name == baseline), bases[0] if bases else None)
    bands: dict[int, tuple[float, float, float]] = {}
    if base is not None:
        held = set(base.run_ids)
        base_hist = series_runs(session, bench, metric, run_ids=list(held))
        for h in base_hist:
            means = [r["mean"] for r in h["runs"]]
            if len(means) >= 2:
                mu, sd = statistics.fmean(means), statistics.stdev(means)
                bands[h["series_id"]] = (mu - 2 * sd, mu, mu + 2 * sd)
            elif means:
                bands[h["series_id"]] = (means[0], means[0], means[0])
    thr = threshold_pct(metric)
    changes = {}
    for h in main:
        cps = hstats.change_points([r["mean"] for r in h["runs"]], thr)
        changes[h["series_id"]] = [{"index": c.index, "delta_pct": c.delta_pct,
                                    "before_mean": c.before_mean, "after_mean": c.after_mean,
                                    "started_at": h["runs"][c.index]["started_at"],
                                    "run_id": h["runs"][c.index]["id"],
                                    "commit": h["runs"][c.index]["commit"]} for c in cps]
    samples: dict[int, list[float]] = {}
    panels: dict[str, list[dict[str, Any]]] = {}
    if detail:
        shown = [r["id"] for h in main for r in h["runs"][-300:]]
        samples = {rid: m.get(metric, []) for rid, m in
                   runs_repo.samples_of(session, shown, [metric]).items()}
        panels = {m: hist(m) for m in panel_metrics if m != metric}
    return {"bench": bench, "history": main, "all_series": all_series, "baselines": bases,
            "baseline": base, "bands": bands, "changes": changes, "samples": samples,
            "unit": hist_repo.unit_of(session, bench.id, metric), "panels": panels,
            "recent": runs_repo.recent_runs(session, bench.id, 25),
            "default_branch": default_branch(bench)}


def matrix_cells(session: Session, name: str, label: str | None,
                 baseline: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """One cell per batch-size series: by default the baseline's runs (the newest baseline, or
    `baseline`), else the newest default-branch run (never a PR run); with `label`, the newest
    run of that label, and its change against the baseline's cell where one exists. Returns the
    cells and the baseline's name."""
    bench = get_benchmark(session, name)
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
    elif base_hist:
        hist = base_hist
    else:
        hist = series_runs(session, bench, "tok_s")
    from_base = hist is base_hist and bool(base_hist)
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
                                       h["gpu"]) if x)
        mean = base_mean[h["series_id"]] if from_base else last["mean"]
        ref = base_mean.get(h["series_id"])
        cv = 100.0 * last["stdev"] / last["mean"] if last["stdev"] is not None and last["mean"] \
            else None  # one trial: no spread to show
        cells.append({"variant": variant, "batch_size": cfg["batch_size"], "mean": mean,
                      "cv_pct": cv, "run_id": last["id"], "from_baseline": from_base,
                      "change_pct": None if from_base or not ref else 100.0 * (mean / ref - 1),
                      "det": f"{det.get('identical', '?')}/{det.get('repeats', '?')} identical"
                      if det else "no digests"})
    return cells, base.name if base else None
