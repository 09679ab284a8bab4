"""Alerts (spec/api.md, "Alerts"; History one rule and Change points add up): a new change
point of a series'
default-branch history (the one history rule), in the metric's worse direction, measured from
the reference level (so a staircase of small steps raises one alert once they add up), raises
one alert; it names the last good and the first bad run
(and their commits), is stored with its state (open, acknowledged, closed), and goes out once to
the webhook and once as a GitHub issue (found again by a hidden marker): both are durable jobs
(deliveries.py, run from service/jobs/).

A change point that moves by a run or two as history grows is the same change: an alert already
raised within NEAR runs of it, in the same direction, stands for it (evaluation.py:
the evaluation itself, in full or from the stored state per series).
"""
from __future__ import annotations

import logging
import shlex
from typing import Any

from collectors.metrics import watched

from ..config import Settings
from ..db import Session, SessionFactory
from ..errors import Invalid, NotFound
from ..format import clean, md, md_comment, series_label
from ..github_rest import GitHub
from ..history import reads as history
from ..repositories import series as series_repo
from ..repositories import upkeep
from ..runs import queries as runs_repo
from . import evaluation
from . import queries as repo

STATES = ("open", "acknowledged", "closed")
log = logging.getLogger("perfwarden.alerts")


def evaluate(session: Session, bench_name: str | None = None,
             metrics: list[str] | None = None) -> list[int]:
    """Look for change points on the default branch of the benchmark(s), from the whole history
    (the full recompute; it rebuilds the stored states); store an alert for each new one in the
    worse direction. Returns the new alerts' ids (none when re-evaluated)."""
    benches = [history.get_benchmark(session, bench_name)] if bench_name else \
        history.benchmarks(session)
    return [a for bench in benches
            for a in evaluation.evaluate(session, bench, watched(metrics))]


def keep_statistics(sessions: SessionFactory) -> list[str]:
    """Before an evaluation pass: the planner statistics of the tables ingest grew, where
    autovacuum does not keep them (repositories/upkeep); the tables analyzed."""
    return upkeep.analyze_stale(sessions)


def evaluate_benchmark(session: Session, bench_name: str) -> evaluation.Pass:
    """One pass of the durable job's evaluation (service/jobs): the oldest of the benchmark's
    runs stored since the last evaluation (one job stands for a burst of ingests), against each
    series' stored state: the new alerts' ids, the runs evaluated, whether more wait."""
    return evaluation.evaluate_new(session, history.get_benchmark(session, bench_name))


def server_url(settings: Settings | None, request_url: str | None = None) -> str:
    """The server's public URL: PERFWARDEN_PUBLIC_URL, else the dashboard's URL, else the URL
    the request came to (a listing through the API); "" when none is known (a delivery job)."""
    for url in ((settings.public_url, settings.dashboard_url) if settings else ()) + (request_url,):
        if url:
            return url.rstrip("/")
    return ""


def to_out(session: Session, alerts: list[Any], settings: Settings | None = None,
           request_url: str | None = None) -> list[dict[str, Any]]:
    series = series_repo.series_rows(session, {a.series_id for a in alerts})
    names = repo.benchmark_names(session, {a.benchmark_id for a in alerts})
    commands = repo.bisect_commands(session, {a.benchmark_id for a in alerts})
    base = ((settings.dashboard_url if settings else None) or "").rstrip("/")
    server = server_url(settings, request_url)
    out = []
    for a in alerts:
        s = series.get(a.series_id)
        config = s.config if s else {}
        label = series_label({**config, "gpu": s.gpu, "gpu_count": s.gpu_count}) if s else \
            str(a.series_id)
        bisect, why = bisect_line(names.get(a.benchmark_id, ""), a, server,
                                  commands.get(a.benchmark_id))
        out.append({
            "id": a.id, "benchmark": names.get(a.benchmark_id, ""), "series_id": a.series_id,
            "series": label, "config": config,
            "metric": a.metric, "branch": a.branch, "state": a.state, "run_id": a.run_id,
            "good_run_id": a.good_run_id, "commit": a.commit, "good_commit": a.good_commit,
            "last_good": last_good(a), "first_bad": first_bad(a),
            "before": a.before, "after": a.after, "delta_pct": a.delta_pct,
            "created_at": runs_repo.utc(a.created_at), "updated_at": runs_repo.utc(a.updated_at),
            "url": f"{base or server}/alerts#alert-{a.id}",
            "bisect": bisect, "bisect_note": why,
            "webhook_delivered_at": runs_repo.utc(a.webhook_delivered_at),
            "github_issue": a.github_issue, "notify_error": a.notify_error})
    return out


def last_good(a: Any) -> str:
    """The last good run and its commit, or plainly why one is unknown."""
    if a.good_run_id is None:
        return "unknown: the change starts at the first run of the history"
    if not a.good_commit:
        return f"run {a.good_run_id} (its record names no commit)"
    return f"run {a.good_run_id} at commit {a.good_commit}"


def first_bad(a: Any) -> str:
    return f"run {a.run_id} at commit {a.commit}" if a.commit else \
        f"run {a.run_id} (its record names no commit)"


def bisect_line(bench: str, a: Any, server: str, command: str | None = None
                ) -> tuple[str | None, str | None]:
    """The `perfwarden bisect` line that finds the commit between the last good and first bad
    run (spec/api.md, bisect), with the benchmark's `bisect_command` after `--`; or None and
    why there is none (a run without a commit, one commit for both, no public URL known)."""
    if not a.commit or not a.good_commit:
        return None, (f"no bisect line: {'the last good' if a.commit else 'the first bad'} "
                      "run's record names no commit; bisect between the runs by hand")
    if a.commit == a.good_commit:
        return None, "no bisect line: the last good and first bad runs have one commit"
    if not server:
        return None, ("no bisect line: the server's public URL is not set "
                      "(PERFWARDEN_PUBLIC_URL)")
    return (f"perfwarden bisect --good {shlex.quote(a.good_commit)} --bad "
            f"{shlex.quote(a.commit)} --benchmark "
            f"{shlex.quote(bench)} --server {shlex.quote(server)} --metric "
            f"{shlex.quote(a.metric)} -- {command or '<collect command>'}"), None


def list_alerts(session: Session, benchmark: str | None, state: str | None,
                settings: Settings | None = None, request_url: str | None = None
                ) -> dict[str, Any]:
    if state and state not in STATES:
        raise Invalid(f"state must be one of {', '.join(STATES)}, not {state!r}", "state")
    bench_id = None
    if benchmark:
        bench_id = runs_repo.benchmark_id(session, benchmark)
        if bench_id is None:
            raise NotFound(f"benchmark {benchmark!r} not found", "benchmark")
    rows, count = repo.list_alerts(session, bench_id, state)
    return {"alerts": to_out(session, rows, settings, request_url), "count": count}


def set_state(session: Session, alert_id: int, state: str, settings: Settings | None = None
              ) -> dict[str, Any]:
    if state not in STATES:
        raise Invalid(f"state must be one of {', '.join(STATES)}, not {state!r}", "state")
    a = repo.get(session, alert_id)
    if a is None:
        raise NotFound(f"alert {alert_id} not found", "alert_id")
    repo.set_state(a, state)
    session.flush()
    return to_out(session, [a], settings)[0]


def open_counts(session: Session) -> dict[int, int]:
    return repo.open_counts(session)


# --- delivery ------------------------------------------------------------------------------
def payload(out: dict[str, Any]) -> dict[str, Any]:
    """The webhook body (spec/api.md); numbers without float noise."""
    return clean({k: out[k] for k in ("benchmark", "series", "metric", "run_id", "commit", "before",
                                "after", "delta_pct", "url")})


def marker(out: dict[str, Any]) -> str:
    return (f"<!-- perfwarden-alert {md_comment(out['benchmark'])} series={out['series_id']} "
            f"metric={md_comment(out['metric'])} run={out['run_id']} -->")


TITLE_MAX = 256  # characters of a GitHub issue title


def open_issue(settings: Settings, out: dict[str, Any]) -> int:
    token = settings.github_token.get_secret_value() if settings.github_token else ""
    title = " ".join(f"perfwarden: {out['metric']} {out['delta_pct']:+.2f}% on {out['benchmark']} "
                     f"({out['series']})".split())  # one line
    if len(title) > TITLE_MAX:  # GitHub refuses a longer one
        title = title[:TITLE_MAX - 1] + "…"
    lines = [marker(out), f"**{md(out['metric'])}** moved {out['delta_pct']:+.2f}% on the "
             f"{md(out['branch'], code=True)} history of **{md(out['benchmark'])}** "
             f"({md(out['series'])}): {out['before']:,.4g} -> {out['after']:,.4g}.", "",
             f"- last good: {md(out['last_good'])}", f"- first bad: {md(out['first_bad'])}",
             f"- alert: {out['url']}"]
    if out["bisect"]:
        lines += ["", "Find the commit:", "", md(out["bisect"], block=True)]
    elif out["bisect_note"]:
        lines += ["", md(out["bisect_note"])]
    assert settings.alert_github_repo is not None
    with GitHub(token, settings.github_api_url) as g:
        issue, _ = g.ensure_issue(settings.alert_github_repo, marker(out), title, "\n".join(lines))
    return int(issue["number"])
