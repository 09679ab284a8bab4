"""The full alert re-evaluation (spec/api.md, Alerts: `POST /api/v1/alerts/evaluate`): a durable
job, never the request, judges every default-branch series of the benchmark (or of every
benchmark) again from its whole history, read in pages, one series a transaction, and keeps its
progress in its row (`GET /api/v1/alerts/evaluations/{id}`). Each series' runs still waiting in
the evaluation inbox are taken off it in the transaction that judges them, so a job that stops
half-way loses none: its retry goes on after the last series it finished. An alert already
raised for a change point is never raised again (evaluation.py, raise_alerts)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..db import Session, SessionFactory, transaction
from ..errors import NotFound
from ..history import reads as history
from ..runs import queries as runs_repo
from . import evaluation
from . import queries as repo

STATES = ("pending", "running", "done", "failed")


def start(sessions: SessionFactory, benchmark: str | None,
          enqueue: Callable[[int], None]) -> dict[str, Any]:
    """A new evaluation, `pending`, its job queued once the row is committed (a worker that
    takes the job at once finds it)."""
    with transaction(sessions) as session:
        if benchmark:
            history.get_benchmark(session, benchmark)  # NotFound for an unknown name
        ev = out(repo.add_evaluation(session, benchmark or None))
    try:
        enqueue(ev["id"])
    except Exception as e:  # no job will run it: it says so instead of staying pending
        fail(sessions, ev["id"], f"its job could not be queued: {type(e).__name__}: {e}")
        raise
    return ev


def show(session: Session, evaluation_id: int) -> dict[str, Any]:
    row = repo.get_evaluation(session, evaluation_id)
    if row is None:
        raise NotFound(f"alert evaluation {evaluation_id} not found", "evaluation_id")
    return out(row)


def out(row: Any) -> dict[str, Any]:
    return {"id": row.id, "benchmark": row.benchmark, "state": row.state,
            "progress": {"series_done": row.done_series, "series_total": row.total_series,
                         "runs": row.runs},
            "new": list(row.new or []), "error": row.error,
            "created_at": runs_repo.utc(row.created_at), "started_at": runs_repo.utc(row.started_at),
            "finished_at": runs_repo.utc(row.finished_at)}


def run(sessions: SessionFactory, evaluation_id: int,
        on_new: Callable[[list[int]], None] = lambda ids: None,
        after_series: Callable[[], None] = lambda: None) -> None:
    """The job: every series not judged yet, in order, one transaction each (its progress
    recorded in it); `on_new` gets each series' new alerts once committed."""
    with transaction(sessions) as session:
        row = repo.get_evaluation(session, evaluation_id, lock=True)
        if row is None or row.state in ("done", "failed"):
            return
        benches = [history.get_benchmark(session, row.benchmark)] if row.benchmark else \
            history.benchmarks(session)
        keys = repo.series_keys(session, [b.id for b in benches])
        repo.mark_running(row, len(keys))
        done = tuple(row.last_series) if row.last_series else None
    todo = [k for k in keys if done is None or k > done]  # keys are in (benchmark, series) order
    for bench_id, series_id in todo:
        with transaction(sessions) as session:
            row = repo.get_evaluation(session, evaluation_id, lock=True)
            if row is None:  # deleted meanwhile
                return
            if row.state != "running" or (row.last_series and
                                          tuple(row.last_series) >= (bench_id, series_id)):
                continue  # another runner of this evaluation (a job put back) judged it
            bench = repo.benchmark_row(session, bench_id)
            # every gating metric the series' history holds, as the ingest's evaluation judges
            new, runs = evaluation.reevaluate_series(session, bench, series_id) \
                if bench is not None else ([], 0)
            repo.record_series(row, (bench_id, series_id), runs, new)
        if new:
            on_new(new)
        after_series()
    with transaction(sessions) as session:
        row = repo.get_evaluation(session, evaluation_id, lock=True)
        if row is not None and row.state == "running":
            repo.mark_done(row)


def fail(sessions: SessionFactory, evaluation_id: int, error: str) -> None:
    """The job gave up: the evaluation is `failed` with the reason (what it judged stays)."""
    with transaction(sessions) as session:
        row = repo.get_evaluation(session, evaluation_id, lock=True)
        if row is not None and row.state != "done":
            repo.mark_failed(row, error)
