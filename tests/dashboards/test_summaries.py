"""Pages read stored summaries: attribution and change points are computed by the job
that runs when runs arrive; a page view never refits; a missing summary says it is computing and
queues the job; a stale one says which runs it covers."""
from __future__ import annotations

import json
import re

import pytest

from tests.conftest import H200, LOCAL, drain_jobs, h200_records, write_at_once

BOTH_DATABASES = True  # the jobs that store summaries run on each database's own queue


@pytest.fixture
def app_client(settings):
    """The app without its in-process worker: jobs run only when the test drains them."""
    from fastapi.testclient import TestClient

    from service.main import create_app

    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
        yield app, c
    app.state.engine.dispose()


def _text(html: str) -> str:
    import html as h

    return h.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def _findings(html: str) -> list[str]:
    block = re.search(r'<div class="card" id="attribution">.*?</div>', html, re.S)
    return [_text(li).strip() for li in re.findall(r"<li>(.*?)</li>", block.group(0), re.S)] \
        if block else []


def _matrix(client) -> list[int]:
    recs = json.loads((H200 / "matrix" / "matrix.json").read_text())
    r = client.post("/api/v1/runs/batch", json={"runs": recs})
    assert r.status_code == 201
    return r.json()["ids"]


def _pending(app) -> int:
    from service.jobs.worker import pending

    return pending(app.state.settings, app.state.sessions)


def test_the_matrix_page_reads_what_the_ingest_job_stored(app_client, monkeypatch):
    app, c = app_client
    _matrix(c)
    drain_jobs(app)  # the alert evaluation a burst of ingests queues stores the summaries
    api_det = c.get("/api/v1/attribution", params={"benchmark": "moe-decode-matrix",
                                                   "metric": "determinism"}).json()
    api_tok = c.get("/api/v1/attribution", params={"benchmark": "moe-decode-matrix"}).json()

    def refit(*a, **k):
        raise AssertionError("a page view refitted")

    from service.attribution import fit as attribution
    from service.stats import history as hstats

    monkeypatch.setattr(attribution, "compute", refit)
    monkeypatch.setattr(hstats, "change_points", refit)
    html = c.get("/benchmarks/moe-decode-matrix/matrix").text
    # the page says what the API says (one answer), from the stored summary
    assert _findings(html) == [api_det["finding"], api_tok["finding"], api_tok["spread_finding"]]
    assert 'id="attribution-note"' not in html
    for path in ("/", "/benchmarks/moe-decode-matrix", "/benchmarks/moe-decode-matrix?series=1"):
        assert c.get(path).status_code == 200, path
    assert _pending(app) == 0  # current summaries: nothing queued by the views


def test_a_missing_summary_is_computing_and_a_stale_one_says_what_it_covers(app_client):
    app, c = app_client
    ids = _matrix(c)
    from service.db import transaction
    from service.models import Summary

    with transaction(app.state.sessions) as s:  # as on a database from before the summaries
        drain_jobs(app)
        s.query(Summary).delete()
    html = c.get("/benchmarks/moe-decode-matrix/matrix").text
    assert _findings(html) == []
    assert "attribution of these runs is being computed" in _text(html)
    assert _pending(app) == 1  # the view queued the refresh, once
    c.get("/benchmarks/moe-decode-matrix/matrix")
    assert _pending(app) == 1  # coalesced: one waiting job stands for both views
    drain_jobs(app)
    assert _findings(c.get("/benchmarks/moe-decode-matrix/matrix").text)[0].startswith(
        "non-identical repeats follow batch_size")
    # a deleted run queues nothing: the next view sees the summary cover runs that changed
    assert c.delete(f"/api/v1/runs/{ids[0]}").status_code == 200
    html = c.get("/benchmarks/moe-decode-matrix/matrix").text
    note = _text(re.search(r'<p class="muted" id="attribution-note">.*?</p>', html, re.S)[0])
    assert "attribution as of 24 runs" in note and "(23 now)" in note and "queued" in note
    assert _findings(html)  # shown as what it is, beside the note
    drain_jobs(app)
    html = c.get("/benchmarks/moe-decode-matrix/matrix").text
    assert 'id="attribution-note"' not in html
    api = c.get("/api/v1/attribution", params={"benchmark": "moe-decode-matrix",
                                               "metric": "determinism"}).json()
    assert api["runs"] == 23 and _findings(html)[0] == api["finding"]


def test_a_label_gets_its_own_attribution_when_its_runs_arrive(app_client):
    app, c = app_client
    recs = json.loads((H200 / "matrix" / "matrix.json").read_text())
    for r in recs:
        r["label"] = "sweep-2"
        r.pop("idempotency_key", None)
    _matrix(c)
    assert c.post("/api/v1/runs/batch", json={"runs": recs[:12]}).status_code == 201
    drain_jobs(app)
    html = c.get("/benchmarks/moe-decode-matrix/matrix", params={"label": "sweep-2"}).text
    api = c.get("/api/v1/attribution", params={"benchmark": "moe-decode-matrix",
                                               "metric": "determinism", "label": "sweep-2"}).json()
    assert api["runs"] == 12 and _findings(html)[0] == api["finding"]
    assert _pending(app) == 0
    # a label of fewer than 3 runs has nothing to attribute: nothing queued, nothing said
    html = c.get("/benchmarks/moe-decode-matrix/matrix", params={"label": "nope"}).text
    assert _findings(html) == [] and 'id="attribution-note"' not in html and _pending(app) == 0


def test_benchmark_panels_mark_the_stored_change_points(app_client):
    """The 30-series history with a 3% step in one series: after the ingest job, its panel marks
    the step (as GET /api/v1/changepoints finds it); another branch's view says it shows none."""
    from tests.service.test_alerts import STEP_SERIES, history

    app, c = app_client
    runs = history()
    for k in range(0, len(runs), 500):
        assert c.post("/api/v1/runs/batch", json={"runs": runs[k:k + 500]}).status_code == 201
    html = c.get("/benchmarks/moe-decode-30").text
    assert "change points of tok_s are being computed" in _text(html)
    drain_jobs(app)
    html = c.get("/benchmarks/moe-decode-30").text
    assert 'id="changes-note"' not in html
    marked = re.findall(r'data-series="(\d+)" data-changes="(\d+)"', html)
    api = c.get("/api/v1/changepoints", params={"benchmark": "moe-decode-30"}).json()
    want = {str(s["series_id"]): len(s["change_points"]) for s in api["series"]}
    assert {sid: int(n) for sid, n in marked} == want
    stepped = [s for s in api["series"] if s["config"]["batch_size"] == STEP_SERIES + 1]
    assert [n for sid, n in want.items() if n] == [1] and want[str(stepped[0]["series_id"])] == 1
    html = c.get("/benchmarks/moe-decode-30", params={"branch": "feature"}).text
    assert "change points are stored for the main history only" in _text(html)


def test_no_orm_object_reaches_a_template(client, monkeypatch):
    """What a page hands its template holds dataclasses, pydantic models and plain values,
    never an ORM row."""
    from dashboards import routes
    from service.models import Base

    seen: list[str] = []
    real = routes.templates.TemplateResponse

    def check(request, name, ctx, **kw):
        def walk(v, where):
            if isinstance(v, Base):
                seen.append(f"{name}: {where} is {type(v).__name__}")
            elif isinstance(v, dict):
                for k, x in v.items():
                    walk(x, f"{where}.{k}")
            elif isinstance(v, (list, tuple, set)):
                for i, x in enumerate(v):
                    walk(x, f"{where}[{i}]")
            elif hasattr(v, "__dataclass_fields__"):
                for k in v.__dataclass_fields__:
                    walk(getattr(v, k), f"{where}.{k}")
        walk(ctx, "ctx")
        return real(request, name, ctx, **kw)

    monkeypatch.setattr(routes.templates, "TemplateResponse", check)
    ids = [client.post("/api/v1/runs", json=r).json()["id"] for r in h200_records("noise", "graphs")]
    assert client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                                  "run_ids": ids[:4]}).status_code == 201
    for path in ("/", "/benchmarks/moe-decode-noise", "/benchmarks/moe-decode-noise?series=1",
                 "/benchmarks/moe-decode-noise/matrix", f"/runs/{ids[0]}", "/alerts",
                 f"/compare?benchmark=moe-decode-noise&baseline=v1&run_ids={ids[-1]}"):
        assert client.get(path).status_code == 200, path
    assert seen == []


def test_panels_hold_each_series_newest_runs_and_the_detail_view_its_newest_thousand(
        app_client, monkeypatch):
    from service.usecases import pages
    from tests.conftest import minimal_run

    app, c = app_client
    monkeypatch.setattr(pages, "PANEL_RUNS", 5)
    monkeypatch.setattr(pages, "DETAIL_RUNS", 7)
    runs = [minimal_run(config={"tp": 1, "batch_size": 1 + i % 2}, commit=f"{i:07d}aa",
                        started_at=f"2026-11-{1 + i // 2:02d}T00:00:00Z") for i in range(20)]
    runs.append(dict(runs[-1]))  # the same record posted twice counts once
    assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
    html = c.get("/benchmarks/bench-a").text
    # the newest 5 stored rows of each series; in M=2's the repeated record counts once
    assert re.findall(r'<div class="muted">(\d+) runs', html) == ["5", "4"]
    assert "its newest 5 runs" in _text(html)
    # each panel's runs are its series' newest, oldest first (the x order)
    import html as h

    fig = json.loads(h.unescape(re.findall(r"data-figure='([^']+)'", html)[0]))
    ticks = [c[3] for c in fig["data"][0]["customdata"]]
    assert ticks == sorted(ticks) and ticks[-1].startswith("2026-11-10")
    sid = re.search(r'data-series="(\d+)"', html).group(1)
    detail = c.get("/benchmarks/bench-a", params={"series": sid}).text
    assert "The newest 7 runs" in _text(detail)


def test_ingest_never_waits_behind_the_refresh_fits(app_client, settings, monkeypatch):
    """The refresh job fits with reads only and stores after: while its change points are
    fitted, another writer takes the write lock at once (SQLite: the one lock; PostgreSQL:
    the summaries' rows), and the summaries are stored after."""
    from service.history import reads as history

    app, c = app_client
    _matrix(c)
    real, writes = history.changepoints, []

    def watched(session, name, metric, *a, **k):
        writes.append(write_at_once(settings.database_url, "UPDATE summaries SET runs = runs"))
        return real(session, name, metric, *a, **k)

    monkeypatch.setattr(history, "changepoints", watched)
    drain_jobs(app)
    assert writes and set(writes) == {"ok"}, writes
    r = c.get("/api/v1/attribution", params={"benchmark": "moe-decode-matrix"})
    assert r.status_code == 200, r.text


def test_a_benchmark_page_works_out_its_own_story_alone(app_client, monkeypatch):
    """The benchmark page shows the home page's answer for its benchmark, and reads no other
    benchmark's standing to get it."""
    from service.usecases import overview

    app, client = app_client
    for bench in ("alpha", "beta", "gamma"):
        recs = [{**r, "benchmark": bench} for r in h200_records("runs")[:2]]
        r = client.post("/api/v1/runs/batch", json={"runs": recs})
        assert r.status_code == 201, r.text
        assert client.post("/api/v1/baselines", json={"name": "v17", "benchmark": bench,
                                                      "run_ids": r.json()["ids"][:1]}
                           ).status_code == 201
    real, read = overview._standing, []
    monkeypatch.setattr(overview, "_standing", lambda s, b, *a, **k: read.append(b.name) or
                        real(s, b, *a, **k))
    client.get("/")
    assert sorted(read) == ["alpha", "beta", "gamma"]  # home: every benchmark
    read.clear()
    assert client.get("/benchmarks/beta").status_code == 200
    assert read == ["beta"]
