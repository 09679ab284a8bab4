"""Alerts end to end: 30 series x 100 default-branch runs with a planted 3% step in one series
raise one alert naming the right runs and commits; it reaches the webhook once and opens one
GitHub issue (a local HTTP server speaking GitHub's issues API); re-evaluating adds nothing."""
from __future__ import annotations

import functools
import json
import random
import statistics
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import SecretStr

from service.config import Settings
from tests.conftest import LOCAL, drain_jobs
from tests.github_standin import POLL_S

TOKEN = "ghp_alert_token_456"
STEP_SERIES, STEP_AT, RUNS, SERIES = 17, 70, 100, 30


class Receiver:
    """The webhook receiver and GitHub's issues API on one loopback port."""

    def __init__(self, webhook_failures: int = 0):
        self.posts: list[dict] = []
        self.webhook_calls = 0
        self.webhook_failures = webhook_failures
        self.issues: list[dict] = []
        rec = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"message": "Bad credentials"})
                if self.path.startswith("/repos/acme/engine/issues"):
                    return self._send(200, rec.issues)
                self._send(404, {"message": "Not Found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.split("?")[0] == "/hook":
                    rec.webhook_calls += 1
                    if rec.webhook_failures > 0:
                        rec.webhook_failures -= 1
                        return self._send(503, {})
                    rec.posts.append(body)
                    return self._send(204, {})
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"message": "Bad credentials"})
                if self.path == "/repos/acme/engine/issues":
                    issue = {"number": len(rec.issues) + 1, **body}
                    rec.issues.append(issue)
                    return self._send(201, issue)
                self._send(404, {"message": "Not Found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(POLL_S,), daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _app(settings: Settings, receiver: Receiver, **over):
    from fastapi.testclient import TestClient

    from service.main import create_app

    over = {k: SecretStr(v) if k == "alert_webhook" and v else v for k, v in over.items()}
    s = settings.model_copy(update={
        "alert_webhook": SecretStr(f"{receiver.url}/hook"), "alert_github_repo": "acme/engine",
        "github_token": SecretStr(TOKEN), "github_api_url": receiver.url, "alert_backoff_s": 0.0,
        "dashboard_url": "http://dash.example", **over})
    return create_app(s), functools.partial(TestClient, **LOCAL)


def reevaluate(c, app, **params) -> dict:
    """A full re-evaluation through the API: 202 with the pending job, then, the queue drained,
    the evaluation done."""
    r = c.post("/api/v1/alerts/evaluate", params=params)
    assert r.status_code == 202 and r.json()["state"] == "pending", r.text
    drain_jobs(app)
    ev = c.get(f"/api/v1/alerts/evaluations/{r.json()['id']}").json()
    assert ev["state"] == "done", ev
    return ev


def history(series: int = SERIES, runs: int = RUNS, step_series: int = STEP_SERIES,
            step_at: int = STEP_AT, step_pct: float = -3.0) -> list[dict]:
    """Runs in time order: each series' tok/s around its own level (1k..15k tok/s) with 0.1%
    noise; from run `step_at` on, series `step_series` is `step_pct` lower."""
    rng = random.Random(7)
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    out = []
    for i in range(runs):
        for s in range(series):
            level = 1000.0 + 480.0 * s
            if s == step_series and i >= step_at:
                level *= 1 + step_pct / 100
            out.append({"benchmark": "moe-decode-30", "config": {"tp": 8, "batch_size": s + 1},
                        "hardware": {"gpu": "NVIDIA H200", "gpu_count": 8},
                        "commit": f"{i:07d}abcdef", "branch": "main",
                        "started_at": (t0 + timedelta(hours=i, seconds=s)).isoformat(),
                        "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher", "samples": [
                            level * (1 + rng.gauss(0, 0.001)) for _ in range(3)]}}})
    return out


def test_planted_step_raises_one_alert_once(settings, receiver):
    app, TC = _app(settings, receiver)
    with TC(app) as c:
        runs = history()
        ids = []
        for k in range(0, len(runs), 500):  # as CI would post them: batches over time
            r = c.post("/api/v1/runs/batch", json={"runs": runs[k:k + 500]})
            assert r.status_code == 201, r.text
            ids += r.json()["ids"]
        drain_jobs(app)  # evaluation and deliveries are durable jobs
        a = c.get("/api/v1/alerts", params={"benchmark": "moe-decode-30"}).json()
        assert a["count"] == 1, a
        alert = a["alerts"][0]
        bad = ids[STEP_AT * SERIES + STEP_SERIES]
        good = ids[(STEP_AT - 1) * SERIES + STEP_SERIES]
        assert alert["run_id"] == bad and alert["good_run_id"] == good
        assert alert["commit"] == f"{STEP_AT:07d}abcdef"
        assert alert["good_commit"] == f"{STEP_AT - 1:07d}abcdef"
        assert alert["metric"] == "tok_s" and alert["state"] == "open"
        assert alert["delta_pct"] == pytest.approx(-3.0, abs=0.15)
        assert "M=18" in alert["series"] and alert["config"]["batch_size"] == 18
        assert alert["bisect"] == (
            f"perfwarden bisect --good {STEP_AT - 1:07d}abcdef --bad {STEP_AT:07d}abcdef "
            "--benchmark moe-decode-30 --server http://dash.example --metric tok_s -- "
            "<collect command>")
        # the webhook got it once, with the spec's keys; one GitHub issue with the marker
        assert receiver.webhook_calls == 1 and len(receiver.posts) == 1
        body = receiver.posts[0]
        assert set(body) == {"benchmark", "series", "metric", "run_id", "commit", "before", "after",
                             "delta_pct", "url"}
        assert body["run_id"] == bad and body["url"] == f"http://dash.example/alerts#alert-{alert['id']}"
        assert len(receiver.issues) == 1
        issue = receiver.issues[0]
        assert "perfwarden-alert moe-decode-30" in issue["body"] and "perfwarden bisect" in issue["body"]
        assert issue["title"] == f"perfwarden: tok_s {alert['delta_pct']:+.2f}% on moe-decode-30 ({alert['series']})"
        assert c.get("/api/v1/alerts").json()["alerts"][0]["github_issue"] == 1
        # the benchmark's own collect command goes after `--`
        cmd = "perfwarden collect decode --device cpu --server http://dash.example"
        r = c.patch("/api/v1/benchmarks/moe-decode-30", json={"bisect_command": cmd})
        assert r.status_code == 200 and r.json()["bisect_command"] == cmd, r.text
        assert c.get("/api/v1/alerts").json()["alerts"][0]["bisect"].endswith(f" -- {cmd}")
        # re-evaluating history, and more runs of the same series, add no alert and send nothing
        assert reevaluate(c, app)["new"] == []
        more = history(runs=RUNS + 3)[RUNS * SERIES:]
        assert c.post("/api/v1/runs/batch", json={"runs": more}).status_code == 201
        drain_jobs(app)
        assert reevaluate(c, app, benchmark="moe-decode-30")["new"] == []
        assert c.get("/api/v1/alerts").json()["count"] == 1
        assert receiver.webhook_calls == 1 and len(receiver.issues) == 1
        # state changes
        r = c.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "acknowledged"})
        assert r.status_code == 200 and r.json()["state"] == "acknowledged"
        assert c.get("/api/v1/alerts", params={"state": "open"}).json()["count"] == 0
        assert c.patch(f"/api/v1/alerts/{alert['id']}", json={"state": "gone"}).status_code == 422
        assert c.patch("/api/v1/alerts/999999", json={"state": "closed"}).status_code == 404
        assert c.get("/api/v1/alerts", params={"state": "maybe"}).status_code == 422
        assert c.get("/api/v1/alerts", params={"benchmark": "nope"}).status_code == 404
    app.state.engine.dispose()


def test_improvements_and_pr_runs_raise_nothing(settings, receiver):
    app, TC = _app(settings, receiver)
    with TC(app) as c:
        up = history(series=3, runs=40, step_series=1, step_at=25, step_pct=+3.0)
        assert c.post("/api/v1/runs/batch", json={"runs": up}).status_code == 201
        pr = history(series=3, runs=40, step_series=2, step_at=0, step_pct=-5.0)[-3:]
        for r in pr:
            r.update(branch="feature", pr=12, repository="acme/engine")
        assert c.post("/api/v1/runs/batch", json={"runs": pr}).status_code == 201
        drain_jobs(app)
        assert c.get("/api/v1/alerts").json()["count"] == 0
        assert receiver.webhook_calls == 0 and not receiver.issues
    app.state.engine.dispose()


def test_webhook_retries_then_delivers(settings):
    rec = Receiver(webhook_failures=2)
    try:
        app, TC = _app(settings, rec, alert_github_repo=None)
        with TC(app) as c:
            runs = history(series=2, runs=40, step_series=0, step_at=25)
            assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
            drain_jobs(app)
            alert = c.get("/api/v1/alerts").json()["alerts"][0]
            assert rec.webhook_calls == 3 and len(rec.posts) == 1
            assert alert["webhook_delivered_at"] and alert["notify_error"] is None
        app.state.engine.dispose()
    finally:
        rec.close()


def test_webhook_down_keeps_the_error_without_the_url(settings, caplog):
    rec = Receiver(webhook_failures=100)
    try:
        secret_url = f"{rec.url}/hook?token=s3cr3t"
        app, TC = _app(settings, rec, alert_github_repo=None, alert_webhook=secret_url)
        with TC(app) as c:
            runs = history(series=2, runs=40, step_series=0, step_at=25)
            assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
            drain_jobs(app)
            alert = c.get("/api/v1/alerts").json()["alerts"][0]
            assert alert["webhook_delivered_at"] is None
            assert alert["notify_error"] == "webhook answered 503"
            assert rec.webhook_calls == 3
            # the next evaluation tries again
            reevaluate(c, app)
            assert rec.webhook_calls == 6
        app.state.engine.dispose()
    finally:
        rec.close()
    assert "s3cr3t" not in caplog.text


def test_matrix_cells_are_the_baselines_and_a_label_is_colored_against_them(client):
    """The matrix shows the newest default-branch run of each cell by default (never a newer
    PR run), and a label's newest runs, each with its change against the baseline's cells."""
    from service.db import transaction
    from service.usecases import pages

    base = history(series=2, runs=3)
    for r in base:
        r["label"] = "v17-run"
    pr = history(series=2, runs=1, step_series=1, step_at=0, step_pct=-4.0)
    for r in pr:
        r.update(label="pr-9", branch="feature", pr=9, repository="acme/engine",
                 started_at="2026-12-01T00:00:00+00:00")
    r = client.post("/api/v1/runs/batch", json={"runs": base})
    assert r.status_code == 201
    assert client.post("/api/v1/runs/batch", json={"runs": pr}).status_code == 201
    r = client.post("/api/v1/baselines", json={"name": "v17", "benchmark": "moe-decode-30",
                                               "run_ids": r.json()["ids"]})
    assert r.status_code in (200, 201), r.text
    sessions = client.app.state.sessions
    with transaction(sessions) as s:
        cells, name = pages.matrix_cells(s, "moe-decode-30", None)
        assert name == "v17" and len(cells) == 2
        newest = {r["config"]["batch_size"]: r for r in base}  # each series' last run
        assert all(c["in_baseline"] and abs(c["change_pct"]) < 1.0 for c in cells)
        for c in cells:
            assert c["mean"] == pytest.approx(statistics.fmean(
                newest[c["batch_size"]]["metrics"]["tok_s"]["samples"]))
        cells, _ = pages.matrix_cells(s, "moe-decode-30", "pr-9")
    by_m = {c["batch_size"]: c for c in cells}
    assert by_m[2]["change_pct"] == pytest.approx(-4.0, abs=0.3)
    assert abs(by_m[1]["change_pct"]) < 0.3


def staircase(metric: str, direction: str, step_pct: float, steps: int = 5, per_step: int = 6,
              noise_pct: float = 0.05, seed: int = 11) -> list[dict]:
    """The staircase: `steps` steps of `step_pct`, `per_step` runs each, noise 0.05%."""
    rng = random.Random(seed)
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    out = []
    for i in range((steps + 1) * per_step):
        level = 100.0 * (1 + step_pct / 100) ** (i // per_step)
        out.append({"benchmark": "stairs", "config": {"tp": 1, "batch_size": 1},
                    "hardware": {"gpu": "NVIDIA H200", "gpu_count": 1},
                    "commit": f"{i:07d}c0ffee", "branch": "main",
                    "started_at": (t0 + timedelta(hours=i)).isoformat(),
                    "metrics": {metric: {"direction": direction, "samples": [
                        level * (1 + rng.gauss(0, noise_pct / 100)) for _ in range(3)]}}})
    return out


def test_staircase_raises_one_alert_once_the_steps_add_up(settings, receiver):
    """Five +0.4% latency steps (2% in all; threshold 1%), posted run by run as CI would: no
    single cut passes the threshold, the levels do (spec/api.md, Change points add up). One alert,
    at the third step,
    measured from the first segment's level; later steps are within 1% of the new reference."""
    app, TC = _app(settings, receiver, alert_webhook=None, alert_github_repo=None)
    with TC(app) as c:
        ids = [c.post("/api/v1/runs", json=r).json()["id"] for r in staircase("latency_s", "lower", 0.4)]
        reevaluate(c, app)
        a = c.get("/api/v1/alerts", params={"benchmark": "stairs"}).json()
        assert a["count"] == 1, a
        alert = a["alerts"][0]
        assert alert["metric"] == "latency_s" and alert["run_id"] == ids[18]
        assert alert["good_run_id"] == ids[17] and alert["commit"] == f"{18:07d}c0ffee"
        assert alert["before"] == pytest.approx(100.0, abs=0.05)
        assert alert["delta_pct"] == pytest.approx(1.2, abs=0.1)
    app.state.engine.dispose()


def test_one_history_rule_keeps_experiments_and_bisect_runs_out(settings, receiver):
    """spec/api.md, History one rule: experiment arms (-51%) and bisect runs (-20%) between main's
    flat runs
    enter no change point, no noise figure, no dashboard marker and raise no alert."""
    from service.db import transaction
    from service.usecases import pages

    app, TC = _app(settings, receiver, alert_webhook=None, alert_github_repo=None)
    with TC(app) as c:
        main = history(series=1, runs=12)
        intruders = []
        for i, r in enumerate(history(series=1, runs=12)[4:]):
            r = {**r, "started_at": r["started_at"].replace(":00:00", ":30:00")}
            scale = 0.49 if i % 2 == 0 else 0.8
            r["metrics"] = {"tok_s": {**r["metrics"]["tok_s"], "samples": [
                v * scale for v in r["metrics"]["tok_s"]["samples"]]}}
            if i % 2 == 0:
                r["experiment"] = {"id": "exp-x", "arm": "candidate", "block": i}
            else:
                r["bisect"] = {"id": "bisect-1", "commit": r["commit"]}
            intruders.append(r)
        assert c.post("/api/v1/runs/batch", json={"runs": main + intruders}).status_code == 201
        cps = c.get("/api/v1/changepoints", params={"benchmark": "moe-decode-30"}).json()
        assert cps["series"][0]["change_points"] == []
        noise = c.get("/api/v1/noise", params={"benchmark": "moe-decode-30"}).json()
        assert noise["series"][0]["runs"] == 12 and noise["series"][0]["run_to_run_cv_pct"] < 0.2
        assert c.get("/api/v1/alerts").json()["count"] == 0
        drain_jobs(app)  # the stored change points the page marks
        with transaction(app.state.sessions) as s:
            view = pages.benchmark_view(s, "moe-decode-30", "tok_s", None, None, None, None, None,
                                        None, None, ("tok_s",), lambda *_: None)
        assert [len(h["runs"]) for h in view.history] == [12]
        assert view.changes_note == "" and all(v == [] for v in view.changes.values())
        # the runs are still stored and found by their tags
        runs = c.get("/api/v1/runs", params={"experiment": "exp-x", "limit": 100}).json()
        assert runs["count"] == 4
        every = c.get("/api/v1/runs", params={"benchmark": "moe-decode-30", "limit": 100}).json()
        tagged = [r for r in every["data"] if r.get("bisect")]
        assert len(tagged) == 4 and tagged[0]["bisect"]["id"] == "bisect-1"
    app.state.engine.dispose()


def leveled(bench: str, parts: list[tuple[float, int]], seed: int = 5) -> list[dict]:
    """tok/s runs of one series at the given levels (level, runs), 0.05% noise, in time order."""
    rng = random.Random(seed)
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    levels = [lv for lv, n in parts for _ in range(n)]
    return [{"benchmark": bench, "config": {"tp": 1, "batch_size": 1},
             "hardware": {"gpu": "NVIDIA H200", "gpu_count": 1},
             "commit": f"{i:07d}feed", "branch": "main",
             "started_at": (t0 + timedelta(hours=i)).isoformat(),
             "metrics": {"tok_s": {"samples": [lv * (1 + rng.gauss(0, 0.0005)) for _ in range(3)]}}}
            for i, lv in enumerate(levels)]


@pytest.mark.parametrize("incremental", [False, True])
def test_a_regression_after_a_fix_raises_a_second_alert(settings, receiver, incremental):
    """100 x20, 97 x20, 100 x20, 97 x20 (tok_s, 0.5%): two alerts, at runs 20 and 60, whether
    the runs arrive one by one (the incremental state) or are re-read in full; the dashboard's
    change points are the same cuts, the recovery at 40 among them."""
    app, TC = _app(settings, receiver, alert_webhook=None, alert_github_repo=None)
    with TC(app) as c:
        recs = leveled("fix", [(100, 20), (97, 20), (100, 20), (97, 20)])
        if incremental:
            ids = []
            for k in range(0, len(recs), 7):
                ids += c.post("/api/v1/runs/batch", json={"runs": recs[k:k + 7]}).json()["ids"]
                drain_jobs(app)
        else:
            ids = c.post("/api/v1/runs/batch", json={"runs": recs}).json()["ids"]
            assert reevaluate(c, app)["progress"]["runs"] == len(recs)
        a = c.get("/api/v1/alerts", params={"benchmark": "fix"}).json()
        assert sorted(x["run_id"] for x in a["alerts"]) == [ids[20], ids[60]], a
        assert all(x["delta_pct"] == pytest.approx(-3.0, abs=0.1) for x in a["alerts"])
        cps = c.get("/api/v1/changepoints", params={"benchmark": "fix"}).json()
        cuts = cps["series"][0]["change_points"]
        assert [x["run_id"] for x in cuts] == [ids[20], ids[40], ids[60]]
        assert {x["run_id"] for x in cuts if x["delta_pct"] < 0} == {x["run_id"] for x in a["alerts"]}
    app.state.engine.dispose()


def test_a_blip_does_not_mask_the_step_after_it(settings, receiver):
    """100 x20, 95 x2, 100 x20, 97 x20: one alert, on the -3% step at run 42; the two-run blip
    raises nothing and the dashboard marks only the step."""
    app, TC = _app(settings, receiver, alert_webhook=None, alert_github_repo=None)
    with TC(app) as c:
        ids = c.post("/api/v1/runs/batch", json={"runs": leveled(
            "blip", [(100, 20), (95, 2), (100, 20), (97, 20)])}).json()["ids"]
        reevaluate(c, app)
        a = c.get("/api/v1/alerts", params={"benchmark": "blip"}).json()
        assert [x["run_id"] for x in a["alerts"]] == [ids[42]], a
        assert a["alerts"][0]["delta_pct"] == pytest.approx(-3.0, abs=0.1)
        cuts = c.get("/api/v1/changepoints", params={"benchmark": "blip"}).json()
        assert [x["run_id"] for x in cuts["series"][0]["change_points"]] == [ids[42]]
    app.state.engine.dispose()


def test_the_bisect_line_names_the_servers_public_url(settings, receiver):
    """PERFWARDEN_PUBLIC_URL is the bisect line's `--server` (before the dashboard's URL); with
    neither set, a listing names the URL it was asked at, and the GitHub issue, written by a
    job that knows none, says there is no line and which setting gives it: never a
    placeholder."""
    recs = leveled("pub", [(100, 20), (96, 20)])
    app, TC = _app(settings, receiver, alert_webhook=None, public_url="https://perf.example/")
    with TC(app) as c:
        c.post("/api/v1/runs/batch", json={"runs": recs})
        drain_jobs(app)
        a = c.get("/api/v1/alerts").json()["alerts"][0]
        assert " --server https://perf.example --metric tok_s " in a["bisect"], a["bisect"]
        assert a["bisect_note"] is None
        assert "--server https://perf.example" in receiver.issues[0]["body"]
    app.state.engine.dispose()
    receiver.issues.clear()
    app, TC = _app(settings, receiver, alert_webhook=None, dashboard_url=None)
    with TC(app) as c:
        more = leveled("pub2", [(100, 20), (96, 20)])
        c.post("/api/v1/runs/batch", json={"runs": more})
        drain_jobs(app)
        a = c.get("/api/v1/alerts", params={"benchmark": "pub2"}).json()["alerts"][0]
        assert " --server http://localhost --metric " in a["bisect"], a["bisect"]
        body = receiver.issues[-1]["body"]
        assert "perfwarden bisect" not in body and "--server" not in body, body
        assert "public URL is not set (PERFWARDEN&#95;PUBLIC&#95;URL)" in body, body
    app.state.engine.dispose()


def test_the_last_good_run_is_named_or_said_unknown(settings, receiver):
    """An alert names its last good run and commit; where the good run's record names no
    commit, it says so (never `?`), and there is no bisect line but the reason for none."""
    recs = leveled("nocommit", [(100, 20), (96, 20)])
    recs[19].pop("commit")
    app, TC = _app(settings, receiver, alert_webhook=None)
    with TC(app) as c:
        ids = c.post("/api/v1/runs/batch", json={"runs": recs}).json()["ids"]
        drain_jobs(app)
        a = c.get("/api/v1/alerts").json()["alerts"][0]
        assert a["good_run_id"] == ids[19] and a["good_commit"] is None
        assert a["last_good"] == f"run {ids[19]} (its record names no commit)"
        assert a["first_bad"] == f"run {ids[20]} at commit 0000020feed"
        assert a["bisect"] is None and "last good run's record names no commit" in a["bisect_note"]
        body = receiver.issues[0]["body"]
        assert "?" not in body and f"last good: run {ids[19]}" in body, body
        assert "names no commit" in body
    app.state.engine.dispose()


def test_every_undelivered_open_alert_is_due_however_many_are_open(settings, receiver):
    """Notifications queued again after an outage cover every open alert not yet sent, not only
    the newest page of them: the oldest of 1,201 open alerts is still due."""
    from sqlalchemy import text

    from service.alerts import deliveries
    from service.alerts import queries as repo
    from service.db import transaction
    from tests.conftest import minimal_run

    app, TC = _app(settings, receiver)
    with TC(app) as c:
        rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
        sessions = app.state.sessions
        with transaction(sessions) as s:
            bench, series = s.execute(text("SELECT benchmark_id, series_id FROM runs WHERE id = "
                                           ":r"), {"r": rid}).one()
            ids = [repo.add(s, benchmark_id=bench, series_id=series, metric="tok_s",
                            branch="main", run_id=rid + k, before=100.0, after=97.0,
                            delta_pct=-3.0).id for k in range(1201)]
        s_ = app.state.settings
        assert len(deliveries.due(sessions, s_)) == 2 * 1201  # a webhook and an issue each
        with transaction(sessions) as s:  # all but the oldest went out
            for a in ids[1:]:
                repo.record_webhook(repo.get(s, a), None)
                repo.record_issue(repo.get(s, a), 7, None)
        assert deliveries.due(sessions, s_) == [("webhook", ids[0]), ("github_issue", ids[0])]
        assert deliveries.due(sessions, s_, ids[1:3]) == []
        no_issue = s_.model_copy(update={"alert_github_repo": ""})
        assert deliveries.due(sessions, no_issue) == [("webhook", ids[0])]
    app.state.engine.dispose()


def test_the_issue_title_fits_github_and_data_links_nowhere(settings, receiver):
    """A series label of data holding a bare URL and hundreds of characters: the alert's issue title
    is cut to GitHub's 256 characters, and no URL of the data becomes a link in its body."""
    evil = "https://evil.example/" + "x" * 179  # the longest value a record may hold
    runs = history(series=2, runs=30, step_series=1, step_at=20)
    for r in runs:
        r["config"]["shared_experts"] = evil
        r["hardware"]["gpu"] = "www.evil.example " + "G" * 183
    app, TC = _app(settings, receiver)
    with TC(app) as c:
        assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
        drain_jobs(app)
        assert len(receiver.issues) == 1
        issue = receiver.issues[0]
        assert len(issue["title"]) <= 256 and issue["title"].endswith("…"), len(issue["title"])
        assert issue["title"].startswith("perfwarden: tok_s -")
        assert "evil.example" in issue["body"] and "https://evil" not in issue["body"]
        assert "https:\u200b//evil.example" in issue["body"] and "www.evil" not in issue["body"]
    app.state.engine.dispose()
