"""Durable jobs survive kill -9 of the worker process, on SQLite and PostgreSQL.

A real `perfwarden worker` process is made to block at a known point (PERFWARDEN_TEST_JOB_PAUSE),
killed with SIGKILL there, and a second worker started: the trace analysis finishes, and the
webhook is delivered once. "Once" is what a receiver can hold us to: every POST of one alert
carries the same X-Perfwarden-Delivery id; killed before the POST, the receiver gets it once;
killed after the receiver took it but before the alert recorded it, the resumed job sends it
again with the same id, so the receiver (which keeps the ids it accepted) accepts it once."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import SecretStr
from sqlalchemy import create_engine, text

from service.jobs.worker import pending
from tests.conftest import H200, LOCAL, ROOT, minimal_run
from tests.github_standin import POLL_S
from tests.service.test_alerts import history

LEASE_S = 2.0


class DedupingReceiver:
    """A webhook receiver on 127.0.0.1 that counts every POST and accepts each delivery id once."""

    def __init__(self):
        self.received: list[str | None] = []
        self.accepted: dict[str, dict] = {}
        rec = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                did = self.headers.get("X-Perfwarden-Delivery")
                rec.received.append(did)
                if did and did not in rec.accepted:
                    rec.accepted[did] = body
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, args=(POLL_S,), daemon=True).start()

    def close(self):
        self.server.shutdown()


def _env(settings, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFWARDEN_")}
    env.update(PERFWARDEN_DATABASE_URL=settings.database_url,
               PERFWARDEN_DATA_DIR=str(settings.data_dir), PERFWARDEN_JOB_LEASE_S=str(LEASE_S),
               PERFWARDEN_JOB_POLL_S="0.2", PERFWARDEN_JOB_BACKOFF_S="0.2", **extra)
    if settings.alert_webhook:
        env["PERFWARDEN_ALERT_WEBHOOK"] = settings.alert_webhook.get_secret_value()
        env["PERFWARDEN_ALERT_BACKOFF_S"] = "0.2"
    return env


def _worker(settings, log: Path, **extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "service.cli", "worker"], cwd=ROOT,
                            env=_env(settings, **extra), stdout=open(log, "ab"),
                            stderr=subprocess.STDOUT)


def _wait(cond, what: str, timeout_s: float = 90.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _kill_at(settings, point: str, tmp_path: Path) -> None:
    """Start a worker that blocks at `point`; once it is there, SIGKILL it."""
    marker = tmp_path / f"paused-{point.replace(':', '-')}"
    w = _worker(settings, tmp_path / "worker-a.log", PERFWARDEN_TEST_JOB_PAUSE=f"{point}={marker}")
    try:
        _wait(lambda: marker.exists() or w.poll() is not None, f"the worker to reach {point}")
        assert w.poll() is None, (tmp_path / "worker-a.log").read_text()
        assert int(marker.read_text()) == w.pid
    finally:
        os.kill(w.pid, signal.SIGKILL)
        w.wait(30)
    assert w.returncode == -signal.SIGKILL


def _stop(w: subprocess.Popen) -> None:
    w.send_signal(signal.SIGTERM)
    try:
        w.wait(30)
    except subprocess.TimeoutExpired:
        w.kill()
        w.wait(10)


def _app(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    # no worker in this process: the worker processes below are the only ones
    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    return app, TestClient(app, **LOCAL)


def _job_column(url: str, kind: str, lite: str, pg: str, waiting: bool = False) -> list:
    """One column of the jobs of `kind` (the jobs table's `lite`, procrastinate's `pg`), oldest
    first; only the waiting ones with `waiting`."""
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            if url.startswith("sqlite"):
                q = f"SELECT {lite} FROM jobs WHERE kind = :k" + (" AND state = 'todo'" * waiting)
            else:
                q = (f"SELECT {pg} FROM procrastinate_jobs WHERE task_name = :k"
                     + (" AND status = 'todo'" * waiting))
            return [v for (v,) in c.execute(text(q + " ORDER BY id"), {"k": kind})]
    finally:
        eng.dispose()


def _job_attempts(url: str, kind: str) -> list[int]:
    return [int(a) for a in _job_column(url, kind, "attempts", "attempts")]


def test_kill_during_trace_analysis_then_it_finishes(settings, tmp_path):
    app, client = _app(settings)
    with client as c:
        rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
        raw = (H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz").read_bytes()
        r = c.post(f"/api/v1/runs/{rid}/traces?filename=graphs.sqlite.gz", content=raw)
        assert r.status_code == 202 and r.json()["state"] == "pending"
        _kill_at(settings, "trace:analyze", tmp_path)
        run = c.get(f"/api/v1/runs/{rid}").json()
        assert run["traces"][0]["state"] == "pending" and run["trace_summary"] is None
        w = _worker(settings, tmp_path / "worker-b.log")
        try:
            # (a GET reads the run, then its traces: under READ COMMITTED it can see the trace
            # done before the run's summary of the same commit; the next GET sees both)
            run = _wait(lambda: (x := c.get(f"/api/v1/runs/{rid}").json())["traces"][0]["state"]
                        != "pending" and (x["trace_summary"] or x["traces"][0]["state"] == "failed")
                        and x, "the second worker to analyze the trace")
            _wait(lambda: pending(app.state.settings, app.state.sessions) == 0,
                  "the queue to empty")
        finally:
            _stop(w)
        assert run["traces"][0]["state"] == "done", (tmp_path / "worker-b.log").read_text()
        assert run["trace_summary"]["steps"] == 10 and run["trace_summary"]["aux_gap_count"] == 30
    app.state.engine.dispose()
    if settings.is_sqlite:  # the killed worker's claim, then the second worker's (kept rows);
        # the start-up sweep (service/jobs/sweep.py) may queue the still-pending trace once
        # more beside the killed worker's job: that copy runs once and finds it done
        attempts = _job_attempts(settings.database_url, "analyze_trace")
        assert attempts[0] == 2 and attempts[1:] in ([], [1]), attempts


@pytest.mark.parametrize("point", ["webhook:before_post", "webhook:after_post"])
def test_kill_during_webhook_delivery_delivers_once(settings, tmp_path, point):
    rec = DedupingReceiver()
    try:
        s = settings.model_copy(update={"alert_webhook": SecretStr(rec.url)})
        app, client = _app(s)
        with client as c:
            runs = history(series=2, runs=40, step_series=0, step_at=25)
            assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
            _kill_at(s, point, tmp_path)  # it evaluated (the alert is stored), then blocked
            alerts = c.get("/api/v1/alerts").json()
            assert alerts["count"] == 1 and alerts["alerts"][0]["webhook_delivered_at"] is None
            assert len(rec.received) == (0 if point == "webhook:before_post" else 1)
            w = _worker(s, tmp_path / "worker-b.log")
            try:
                alert = _wait(lambda: (a := c.get("/api/v1/alerts").json()["alerts"][0])
                              ["webhook_delivered_at"] and a, "the webhook delivery")
            finally:
                _stop(w)
        app.state.engine.dispose()
        did = f"alert-{alert['id']}-webhook"
        assert list(rec.accepted) == [did]  # one distinct delivery accepted
        assert rec.accepted[did]["run_id"] == alert["run_id"]
        if point == "webhook:before_post":
            assert rec.received == [did]  # killed before sending: sent once
        else:
            assert rec.received == [did, did]  # sent again after the kill, with the same id
        assert alert["notify_error"] is None
    finally:
        rec.close()


def _waiting(url: str, kind: str) -> int:
    return len(_job_column(url, kind, "id", "id", waiting=True))


def test_a_burst_of_ingests_is_one_evaluation_per_benchmark(settings):
    """Eight batches of one benchmark and two of another, posted while no worker runs, leave
    two waiting evaluations; running them raises the planted step's one alert."""
    from tests.conftest import drain_jobs

    app, client = _app(settings)
    with client as c:
        runs = history(series=2, runs=40, step_series=0, step_at=25)
        for k in range(0, len(runs), 10):
            assert c.post("/api/v1/runs/batch", json={"runs": runs[k:k + 10]}).status_code == 201
        other = [{**r, "benchmark": "other-bench"} for r in history(series=1, runs=20)]
        for k in range(0, len(other), 10):
            assert c.post("/api/v1/runs/batch", json={"runs": other[k:k + 10]}).status_code == 201
        assert _waiting(settings.database_url, "evaluate_alerts") == 2
        assert c.get("/api/v1/alerts").json()["count"] == 0  # nothing ran in the request
        drain_jobs(app)
        assert _waiting(settings.database_url, "evaluate_alerts") == 0
        a = c.get("/api/v1/alerts").json()
        assert a["count"] == 1 and a["alerts"][0]["benchmark"] == "moe-decode-30"
    app.state.engine.dispose()


def _due_in_s(url: str, kind: str) -> list[float]:
    """Seconds until each waiting job of `kind` is due."""
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    due = [datetime.fromisoformat(d) if isinstance(d, str) else d
           for d in _job_column(url, kind, "run_after", "scheduled_at", waiting=True)]
    return [0.0 if d is None else ((d if d.tzinfo else d.replace(tzinfo=timezone.utc)) - now)
            .total_seconds() for d in due]


@pytest.mark.serial
def test_a_slow_summary_refresh_paces_the_next(settings, monkeypatch):
    """After a quick refresh the refresh an evaluation queues is due at once; after one that
    took 3 s it is due 4 x 3 s after that one ended, and a page asking meanwhile joins it."""
    from service.jobs import tasks
    from tests.conftest import drain_jobs

    app, client = _app(settings.model_copy(update={"summary_pace": 4.0}))  # the default
    with client as c:
        runs = history(series=1, runs=12)
        name = runs[0]["benchmark"]
        assert c.post("/api/v1/runs/batch", json={"runs": runs[:6]}).status_code == 201
        drain_jobs(app)
        assert _waiting(settings.database_url, "summarize") == 0
        ctx = tasks.Context(app.state.settings, app.state.sessions, app.state.queue)
        monkeypatch.setitem(tasks._refreshed, name, (0.1, time.monotonic()))
        assert c.post("/api/v1/runs/batch", json={"runs": runs[6:9]}).status_code == 201
        tasks.KINDS["evaluate_alerts"].run(ctx, {"benchmark": name})
        due = _due_in_s(settings.database_url, "summarize")
        assert len(due) == 1 and due[0] <= 0.5
        drain_jobs(app)  # the refresh runs, and is timed
        assert 0 < tasks._refreshed[name][0] < tasks.QUICK_REFRESH_S
        monkeypatch.setitem(tasks._refreshed, name, (3.0, time.monotonic() - 5.0))
        assert c.post("/api/v1/runs/batch", json={"runs": runs[9:]}).status_code == 201
        tasks.KINDS["evaluate_alerts"].run(ctx, {"benchmark": name})
        due = _due_in_s(settings.database_url, "summarize")
        assert len(due) == 1 and 5.0 < due[0] <= 7.0  # 12 s after it ended, 5 s ago
        tasks.enqueue_summaries(app.state.queue, name, [])  # a page finds its summary stale
        assert _waiting(settings.database_url, "summarize") == 1
        monkeypatch.setitem(tasks._refreshed, name, (3.0, time.monotonic() - 20.0))
        assert tasks.summary_wait_s(name, 4.0) == 0.0  # long enough ago
    app.state.engine.dispose()


def test_a_failed_job_whose_key_waits_again_is_not_left_running(settings, monkeypatch):
    """An evaluation that fails while an ingest has queued the next one (same coalescing key):
    the waiting job stands for it, runs, and no job is left running or failed (on PostgreSQL a
    retry beside the waiting job broke the key's unique index and stayed `doing` for good)."""
    from service.jobs import tasks
    from tests.conftest import drain_jobs

    app, client = _app(settings)
    calls = []

    def flaky(ctx, args):
        calls.append(args["benchmark"])
        if len(calls) == 1:
            tasks.enqueue_evaluation(ctx.queue, {"b": [2]})  # runs arrive meanwhile
            raise RuntimeError("the database went away")

    kind = tasks.KINDS["evaluate_alerts"]
    monkeypatch.setitem(tasks.KINDS, "evaluate_alerts", tasks.Kind(flaky, kind.attempts,
                                                                   kind.backoff_s))
    with client:
        tasks.enqueue_evaluation(app.state.queue, {"b": [1]})
        drain_jobs(app, timeout_s=30)
    assert calls == ["b", "b"]
    assert _waiting(settings.database_url, "evaluate_alerts") == 0
    if settings.database_url.startswith("postgresql"):
        states = _job_column(settings.database_url, "evaluate_alerts", "state", "status::text")
        assert "doing" not in states and "failed" not in states, states
    app.state.engine.dispose()
