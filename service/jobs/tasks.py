"""The job kinds: what each runs, how often it is tried and how long it waits between tries.
Both queues (procrastinate on PostgreSQL, the jobs table on SQLite) run these same functions."""
from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from ..alerts import deliveries, lifecycle, reevaluation
from ..config import Settings
from ..db import transaction
from ..errors import DomainError
from ..github.auto import post_for_run
from ..github.prcomments import run_to_recomment
from ..sandbox import Sandbox
from ..traces import attach as traces
from ..usecases import summaries
from .pause import pause_point

log = logging.getLogger("perfwarden.jobs")
MAX_DELAY_S = 300.0
# The pages' summaries (ANOVA over every run, each series' change points) cost more as the
# history grows. The refresh an evaluation queues is due `summary_pace` (a setting, default 4)
# times as long after the end of this process's last refresh of the benchmark as that refresh
# took (at most MAX_DELAY_S; at once after a refresh of under QUICK_REFRESH_S), so a steady
# stream of ingests spends at most 1/(1 + pace) of a core on refreshing however long the history,
# and a page says what its summary covers meanwhile.
QUICK_REFRESH_S = 0.25
_refreshed: dict[str, tuple[float, float]] = {}  # benchmark -> (seconds taken, monotonic end)


@dataclass
class Context:
    settings: Settings
    sessions: sessionmaker[Session]
    queue: Any  # the Queue the job may add follow-ups to (queue.Queue; Any: no import cycle)


@dataclass(frozen=True)
class Kind:
    run: Callable[[Context, dict[str, Any]], None]
    attempts: Callable[[Settings], int]
    backoff_s: Callable[[Settings], float]
    give_up: Callable[[Context, dict[str, Any], str], None] | None = None
    lane: str = "default"  # the lane (LANES) whose workers run it


# Each lane has workers of its own (Settings.trace_concurrency, job_concurrency,
# delivery_concurrency), so a trace analysis, however long, never holds up an alert, a delivery
# or a PR comment, nor they it, and a slow receiver holds up no evaluation or summary.
LANES = ("trace", "default", "delivery")


def kinds_of(lane: str) -> list[str]:
    if lane not in LANES:
        raise ValueError(f"no lane {lane!r}; lanes: {', '.join(LANES)}")
    return [name for name, kind in KINDS.items() if kind.lane == lane]


def lane_workers(settings: Settings) -> dict[str, int]:
    """How many jobs each lane runs at once in one worker."""
    return {"trace": settings.trace_concurrency, "default": settings.job_concurrency,
            "delivery": settings.delivery_concurrency}


def workers_died(attempts: int) -> str:
    """Why a job whose worker died on each of its `attempts` fails for good (either queue)."""
    return f"gave up after {attempts} attempts (the worker stopped each time)"


def delay_s(kind: Kind, settings: Settings, attempt: int) -> float:
    """Wait before try `attempt + 1`: exponential from the kind's base, at most 5 minutes."""
    return min(MAX_DELAY_S, kind.backoff_s(settings) * 2 ** max(0, attempt - 1))


# --- trace analysis ------------------------------------------------------------------------
def _analyze_trace(ctx: Context, args: dict[str, Any]) -> None:
    traces.analyze_pending(ctx.sessions, ctx.settings.data_dir, int(args["trace_id"]),
                           before=lambda: pause_point("trace:analyze"),
                           sandbox=Sandbox.of(ctx.settings))
    _recomment(ctx, int(args["trace_id"]))
    _refresh_explained(ctx, int(args["trace_id"]))


def _refresh_explained(ctx: Context, trace_id: int) -> None:
    """A trace analyzed after its run's summaries were computed: where the benchmark has a
    matrix report, its refresh is queued (coalesced), so the page's trace diff takes it in."""

    with transaction(ctx.sessions) as session:
        name = summaries.explained_by_trace(session, trace_id)
    if name is not None:
        enqueue_summaries(ctx.queue, name, [], summary_wait_s(name, ctx.settings.summary_pace))


def _trace_failed(ctx: Context, args: dict[str, Any], error: str) -> None:
    traces.mark_failed(ctx.sessions, int(args["trace_id"]), error, ctx.settings.data_dir)
    _recomment(ctx, int(args["trace_id"]))


def _recomment(ctx: Context, trace_id: int) -> None:
    """A PR comment already posted for the trace's run said its evidence was pending: its job
    renders it again (a trace that failed is no longer pending either)."""
    s = ctx.settings
    if not (s.github_token and s.bot_baseline):
        return

    with transaction(ctx.sessions) as session:
        run_id = run_to_recomment(session, trace_id, s.bot_baseline)
    if run_id is not None:
        enqueue_pr_comment(ctx.queue, run_id)


# --- alerts --------------------------------------------------------------------------------
def _evaluate_alerts(ctx: Context, args: dict[str, Any]) -> None:
    """Every default-branch series of the benchmark (one job per burst of ingests), then one
    delivery job per new alert and channel, then one waiting refresh of the pages' stored
    summaries: its fits (ANOVA over the benchmark's runs, change points) grow with the history,
    so they never hold up an alert, and a burst of evaluations leaves one refresh."""

    more, evaluated = True, 0
    while more:  # one transaction per pass: a job far behind keeps what it has done
        if analyzed := lifecycle.keep_statistics(ctx.sessions):  # the statistics its plans need
            log.info("analyzed %s (autovacuum is off)", ", ".join(analyzed))
        with transaction(ctx.sessions) as session:
            try:
                new, runs, more = lifecycle.evaluate_benchmark(session, str(args["benchmark"]))
            except DomainError as e:  # the benchmark went away meanwhile
                log.warning("alert evaluation of %r skipped: %s", args["benchmark"], e.message)
                return
        evaluated += runs
        if new:
            enqueue_deliveries(ctx.queue, ctx.sessions, ctx.settings, new)
    if evaluated:  # an evaluation that found nothing new (its runs taken by the one before) leaves
        name = str(args["benchmark"])  # the summaries as they are
        enqueue_summaries(ctx.queue, name, [], summary_wait_s(name, ctx.settings.summary_pace))


def _reevaluate_alerts(ctx: Context, args: dict[str, Any]) -> None:
    """A full re-evaluation (alerts/reevaluation.py): series by series, its progress in its row;
    each series' new alerts go out at once; then undelivered notifications are queued again."""

    reevaluation.run(ctx.sessions, int(args["evaluation"]),
                    on_new=lambda ids: enqueue_deliveries(ctx.queue, ctx.sessions, ctx.settings,
                                                          ids),
                    after_series=lambda: pause_point("alerts:reevaluate"))
    enqueue_deliveries(ctx.queue, ctx.sessions, ctx.settings)


def _reevaluation_failed(ctx: Context, args: dict[str, Any], error: str) -> None:
    reevaluation.fail(ctx.sessions, int(args["evaluation"]), error)


def summary_wait_s(benchmark: str, pace: float) -> float:
    """How long the refresh queued after an evaluation waits (`pace`: the setting)."""
    took, end = _refreshed.get(benchmark, (0.0, 0.0))
    if took < QUICK_REFRESH_S:
        return 0.0
    return max(0.0, min(MAX_DELAY_S, pace * took) - (time.monotonic() - end))


def _summarize(ctx: Context, args: dict[str, Any]) -> None:
    """The stored summaries the dashboard reads (attribution, change points): usecases/summaries."""

    name, labels = str(args["benchmark"]), [str(x) for x in args.get("labels") or []]
    t0 = time.perf_counter()
    with transaction(ctx.sessions) as session:  # the fits: reads only, no write lock held
        try:
            done = summaries.compute(session, name, labels, ctx.settings.gate_alpha)
        except DomainError as e:  # the benchmark went away meanwhile
            log.warning("summaries of %r skipped: %s", args["benchmark"], e.message)
            return
    with transaction(ctx.sessions) as session:
        summaries.store(session, done)
    if not labels:
        _refreshed[name] = (time.perf_counter() - t0, time.monotonic())


def _webhook(ctx: Context, args: dict[str, Any]) -> None:
    deliveries.webhook(ctx.sessions, ctx.settings, int(args["alert_id"]), pause=pause_point)


def _github_issue(ctx: Context, args: dict[str, Any]) -> None:
    deliveries.github_issue(ctx.sessions, ctx.settings, int(args["alert_id"]))


def _pr_comment(ctx: Context, args: dict[str, Any]) -> None:
    post_for_run(ctx.sessions, ctx.settings, int(args["run_id"]))


def _attempts(s: Settings) -> int:
    return s.job_attempts


def _backoff(s: Settings) -> float:
    return s.job_backoff_s


KINDS: dict[str, Kind] = {
    "analyze_trace": Kind(_analyze_trace, _attempts, _backoff, give_up=_trace_failed,
                          lane="trace"),
    "evaluate_alerts": Kind(_evaluate_alerts, _attempts, _backoff),
    "reevaluate_alerts": Kind(_reevaluate_alerts, _attempts, _backoff,
                              give_up=_reevaluation_failed),
    "summarize": Kind(_summarize, _attempts, _backoff),
    # the webhook keeps its own retry settings (PERFWARDEN_ALERT_RETRIES, _ALERT_BACKOFF_S)
    "webhook": Kind(_webhook, lambda s: s.alert_retries, lambda s: s.alert_backoff_s,
                    lane="delivery"),
    "github_issue": Kind(_github_issue, _attempts, _backoff, lane="delivery"),
    "pr_comment": Kind(_pr_comment, _attempts, _backoff, lane="delivery"),
}


# --- what callers enqueue ------------------------------------------------------------------
def enqueue_trace(queue: Any, trace_id: int) -> None:
    queue.enqueue("analyze_trace", {"trace_id": trace_id}, coalesce=f"trace:{trace_id}")


def enqueue_evaluation(queue: Any, benchmarks: dict[str, list[int]]) -> None:
    """One waiting evaluation per benchmark: a burst of ingests is one evaluation."""
    for name, run_ids in benchmarks.items():
        queue.enqueue("evaluate_alerts", {"benchmark": name, "run_ids": run_ids[:1000]},
                      coalesce=f"evaluate:{name}")


def enqueue_reevaluation(queue: Any, evaluation_id: int) -> None:
    """The job of a full re-evaluation (POST /api/v1/alerts/evaluate)."""
    queue.enqueue("reevaluate_alerts", {"evaluation": evaluation_id},
                  coalesce=f"reevaluate:{evaluation_id}")


def enqueue_summaries(queue: Any, benchmark: str, labels: list[str], after_s: float = 0.0) -> None:
    """A refresh of the benchmark's summaries (and these labels'), due in `after_s` seconds: one
    waiting job per benchmark and labels (a page asking for one joins the waiting one)."""
    key = hashlib.sha256(json.dumps([benchmark, labels]).encode()).hexdigest()[:32]
    queue.enqueue("summarize", {"benchmark": benchmark, "labels": labels[:20]},
                  coalesce=f"summarize:{key}", after_s=after_s)


def enqueue_deliveries(queue: Any, sessions: sessionmaker[Session], settings: Settings,
                       ids: list[int] | None = None) -> None:

    for kind, alert_id in deliveries.due(sessions, settings, ids):
        queue.enqueue(kind, {"alert_id": alert_id}, coalesce=f"{kind}:{alert_id}")


def enqueue_pr_comment(queue: Any, run_id: int) -> None:
    queue.enqueue("pr_comment", {"run_id": run_id}, coalesce=f"pr_comment:{run_id}")
