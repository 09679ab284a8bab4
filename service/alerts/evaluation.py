"""Incremental alert evaluation: the evaluation after an ingest reads the runs
stored since the last one and each touched series' stored state, never the whole history, so
a batch costs the same at a million runs as at a thousand.

The state of a series and metric holds its newest runs; the part judged is the runs since the
reference segment began (spec/api.md, Change points add up: the first segment, or the one the last
change
point moved to). Its first segment is then the reference, as in a full recompute, and the same
rule (stats/history.change_points: ruptures PELT, the threshold from the reference level, three
runs before the newest segment is judged) runs on it, with PELT's penalty of the whole history's
length and the noise scale of the CONTEXT runs before the part and the part. A change point
moves the part's start to it. A part longer than WINDOW_MAX runs keeps its newest WINDOW_KEEP
runs and the reference level as a number. A run older than the state's first run, a changed
default branch or a deleted run make the state be rebuilt from the series' history."""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import replace
from typing import Any, NamedTuple

from collectors.metrics import HIGHER, lookup, threshold_pct, watched

from ..db import Session
from ..history import queries as hist_repo
from ..history import reads as history
from ..repositories import series as series_repo
from ..runs import queries as runs_repo
from ..stats import history as hstats
from . import queries as alerts_repo

WINDOW_MAX = 600  # runs judged at most; past it the newest WINDOW_KEEP, from a stored level
WINDOW_KEEP = 300
CONTEXT = 200  # runs kept before the judged part: PELT's noise scale is taken over them too
NEAR = 3  # an alert within this many runs of a change point, same direction, stands for it
PENDING_PER_PASS = 10_000  # runs one evaluation pass takes off the inbox (its queries' IN lists
# stay far below PostgreSQL's 65,535 parameters, its memory bounded, however far behind it is)

Window = list[list[Any]]  # [run id, started_at epoch seconds, run mean], oldest first


def direction(metric: str) -> str:
    d = lookup(metric)
    return d.direction if d is not None else HIGHER


def evaluate(session: Session, bench: history.BenchmarkRow, metrics: list[str]) -> list[int]:
    """The full recompute in one transaction (seeding, the local judge): every series of the
    benchmark as a re-evaluation job judges it (reevaluate_series)."""
    return [a for s in series_repo.series_of_benchmark(session, bench.id)
            for a in reevaluate_series(session, bench, s.id, metrics)[0]]


class Pass(NamedTuple):
    alerts: list[int]  # new alerts' ids
    runs: int  # runs evaluated
    more: bool  # more runs wait: the caller commits and runs another pass


def evaluate_new(session: Session, bench: history.BenchmarkRow) -> Pass:
    """The oldest PENDING_PER_PASS runs not yet evaluated, against their series' states."""
    run_ids = hist_repo.take_pending(session, bench.id, PENDING_PER_PASS)
    alerts, taken = _evaluate_runs(session, bench, run_ids)
    return Pass(alerts, len(run_ids) + taken, len(run_ids) == PENDING_PER_PASS)


def _evaluate_runs(session: Session, bench: history.BenchmarkRow, run_ids: list[int]
                   ) -> tuple[list[int], int]:
    """The new alerts of `run_ids` and how many more runs left the inbox with them."""
    metrics = watched(runs_repo.metric_names(session, run_ids)) \
        if run_ids else []
    if not metrics:
        return [], 0
    branch = history.default_branch(bench)
    fresh = _fresh_runs(session, bench.id, run_ids, metrics, branch)
    series_repo.lock(session, {sid for sid, _ in fresh})  # a re-evaluation of one waits, or we do
    stored = hist_repo.states(session, {sid for sid, _ in fresh}, metrics)
    stale = set()
    for (sid, metric), runs in fresh.items():
        state = stored.get((sid, metric))
        window = state.window if state is not None and state.branch == branch else []
        if not window or runs[0][1] < window[0][1]:  # no state, or a run older than it
            stale.add(sid)
    new, taken = _rebuild_series(session, bench, stale, metrics) if stale else ([], 0)
    for (sid, metric), runs in sorted(fresh.items()):
        if sid in stale:
            continue
        state = stored[(sid, metric)]
        merged = sorted({w[0]: w for w in state.window + runs}.values(),
                        key=lambda w: (w[1], w[0]))
        start = next((i for i, w in enumerate(merged) if w[0] == state.start_run), 0)
        new += judge(session, bench, metric, sid, merged, start, state.reference,
                     state.runs + len(merged) - len(state.window))
    return new, taken


def _rebuild_series(session: Session, bench: history.BenchmarkRow, series_ids: set[int],
                    metrics: list[str]) -> tuple[list[int], int]:
    """Series with no state, or a new run older than it: every watched metric of theirs from
    the history (the full recompute), and each of their runs still waiting in the inbox taken
    off it first, since the rebuild judges them (a worker far behind, whose pass holds the
    oldest runs, rebuilds a series once, not again at each pass that brings older runs)."""
    taken = hist_repo.take_series_pending(session, bench.id, sorted(series_ids))
    names = watched(runs_repo.metric_names(session, taken)) if taken else []
    new: list[int] = []
    for sid in sorted(series_ids):
        for metric in sorted(set(metrics) | set(names)):
            new += rebuild(session, bench, metric, sid)
    return new, len(taken)


def _fresh_runs(session: Session, bench_id: int, run_ids: list[int], metrics: list[str],
                branch: str) -> dict[tuple[int, str], Window]:
    """(series, metric) -> the new history runs, oldest first; a record posted before counts
    as its first post only (the history rule's "counts once")."""
    rows = hist_repo.new_history_rows(session, bench_id, run_ids, metrics, branch)
    first = hist_repo.first_posts(session, bench_id, (r.body_sha256 for r in rows))
    out: dict[tuple[int, str], Window] = defaultdict(list)
    for r in rows:
        if first.get(r.body_sha256, r.id) == r.id:
            out[(r.series_id, r.metric)].append([r.id, r.started_at.timestamp(), r.mean])
    for runs in out.values():
        runs.sort(key=lambda w: (w[1], w[0]))
    return out


def rebuild(session: Session, bench: history.BenchmarkRow, metric: str, series_id: int
            ) -> list[int]:
    """The state of one series from its history (the full recompute), with its alerts."""
    return _from_history(session, bench, metric, series_id)[0]


def _from_history(session: Session, bench: history.BenchmarkRow, metric: str, series_id: int
                  ) -> tuple[list[int], int]:
    """One series and metric judged from its whole history (read in pages), its state rebuilt:
    the new alerts and the runs judged."""
    new: list[int] = []
    runs = 0
    for s in history.series_runs(session, bench, metric, series_id=series_id, limit=None):
        window = [[r["id"], _epoch(r["started_at"]), r["mean"]] for r in s["runs"]]
        runs += len(window)
        new += judge(session, bench, metric, series_id, window, 0, None, len(window))
    return new, runs


def reevaluate_series(session: Session, bench: history.BenchmarkRow, series_id: int,
                      metrics: list[str] | None = None) -> tuple[list[int], int]:
    """The full recompute of one series (a re-evaluation job's step): the series held (an
    ingest's evaluation of it waits), its runs waiting in the inbox taken off it, every gating
    metric its runs hold (as an ingest's evaluation judges them; and `metrics`) judged from the
    whole history (read in pages) and its state rebuilt; the new alerts and the runs judged (those of
    its longest metric)."""
    series_repo.lock(session, [series_id])
    taken = hist_repo.take_series_pending(session, bench.id, [series_id])
    names = watched(runs_repo.metric_names(session, taken)) if taken else []
    own = watched(hist_repo.series_metrics(session, series_id))
    new: list[int] = []
    runs = 0
    for metric in sorted(set(metrics or []) | set(own) | set(names)):
        found, judged = _from_history(session, bench, metric, series_id)
        new, runs = new + found, max(runs, judged)
    return new, runs


def judge(session: Session, bench: history.BenchmarkRow, metric: str, series_id: int,
          window: Window, start: int, reference: float | None, runs: int) -> list[int]:
    """The change points of `window[start:]`, a part of a `runs`-run history (from `reference`,
    or from its first segment; PELT's penalty that of the whole history, its noise scale that of
    the whole window), the alerts of the new ones, and the state kept for the next runs."""
    means = [float(w[2]) for w in window]
    penalty, scale = hstats.penalty_for(runs), hstats.scale_of(means)
    # every change point moves the reference (a recovery too); the worse ones raise alerts
    cps = [replace(c, index=c.index + start) for c in hstats.change_points(
        means[start:], threshold_pct(metric), penalty=penalty, reference=reference, scale=scale,
        after_change=start > 0 and reference is None)]
    worse = [c for c in cps if hstats.is_worse(c, direction(metric)) and not c.continues]
    new = raise_alerts(session, bench, metric, series_id, [w[0] for w in window], worse) \
        if worse else []
    if cps:  # the part starts at the reference segment, as in the full recompute
        start, reference = cps[-1].index, None
    if len(window) - start > WINDOW_MAX:
        if reference is None:
            first, end = hstats.segments(means[start:], penalty, scale)[0]
            reference = statistics.fmean(means[start + first:start + end])
        start = len(window) - WINDOW_KEEP
    cut = max(0, start - CONTEXT)
    hist_repo.save_state(session, series_id, metric, history.default_branch(bench), reference,
                         window[cut:], window[start][0], runs)
    return new


def raise_alerts(session: Session, bench: history.BenchmarkRow, metric: str, series_id: int,
                 ids: list[int], cps: list[hstats.ChangePoint]) -> list[int]:
    """An alert for each change point of the run ids `ids` that no alert stands for yet (the
    same change, moved by a run or two as history grew: within NEAR runs, same direction)."""
    pos = {rid: i for i, rid in enumerate(ids)}
    known = alerts_repo.of_series(session, series_id, metric)
    commits = hist_repo.commits_of(session, [ids[c.index + k] for c in cps for k in (-1, 0)
                                             if c.index + k >= 0])
    out = []
    for c in cps:
        if any(abs(pos.get(a.run_id, -10**9) - c.index) <= NEAR
               and (a.delta_pct < 0) == (c.delta_pct < 0) for a in known):
            continue
        bad, good = ids[c.index], ids[c.index - 1] if c.index > 0 else None
        a = alerts_repo.add(session, benchmark_id=bench.id, series_id=series_id, metric=metric,
                            branch=history.default_branch(bench), run_id=bad, good_run_id=good,
                            commit=commits.get(bad), good_commit=commits.get(good or -1),
                            before=c.before_mean, after=c.after_mean, delta_pct=c.delta_pct)
        known.append(a)
        out.append(a.id)
    return out


def _epoch(text: str | None) -> float:
    from datetime import datetime

    return datetime.fromisoformat((text or "").replace("Z", "+00:00")).timestamp()
