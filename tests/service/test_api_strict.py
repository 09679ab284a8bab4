"""Strict API (spec/api.md, Runs, series and baselines): unknown query parameters and body fields, writes that never
reopen, proxies, migration state, deleting runs."""
from __future__ import annotations

import json

import pytest

from tests.conftest import LOCAL, count_rows, drain_jobs, minimal_run


def test_unknown_query_parameters_are_422(client):
    client.post("/api/v1/runs", json=minimal_run(pr=150, repository="acme/engine",
                                                  started_at="2026-11-01T00:00:00Z"))
    client.post("/api/v1/runs", json=minimal_run(started_at="2026-11-02T00:00:00Z"))
    for url in ("/api/v1/runs?comit=abc", "/api/v1/noise?benchmark=bench-a&brnch=main",
                "/api/v1/benchmarks?x=1", "/api/v1/baselines?since=2026-01-01"):
        r = client.get(url)
        assert r.status_code == 422, url
        err = r.json()["error"]
        assert "unknown query parameter" in err["message"] and err["field"]
    # a dashboard page says the same as a page
    r = client.get("/?foo=1")
    assert r.status_code == 422 and r.headers["content-type"].startswith("text/html")
    assert "foo: unknown query parameter" in r.text
    # the spec's filters work rather than answering everything
    assert client.get("/api/v1/runs?pr=150").json()["count"] == 1
    assert client.get("/api/v1/runs?repository=acme/engine").json()["count"] == 1
    assert client.get("/api/v1/runs?since=2026-11-01T12:00:00Z").json()["count"] == 1


def test_unknown_body_fields_are_422_and_known_extras_are_kept(client, settings):
    r = client.post("/api/v1/runs", json=minimal_run(comit="abc"))
    assert r.status_code == 422 and r.json()["error"]["field"] == "comit"
    assert count_rows(settings.database_url, "runs") == 0
    r = client.post("/api/v1/runs", json=minimal_run(
        experiment={"id": "ab-1", "arm": "candidate", "block": 3}, trials=[{"tok_s": 1.0}],
        trace_files=["traces/rank0.json.gz"]))
    assert r.status_code == 201
    run = client.get(f"/api/v1/runs/{r.json()['id']}").json()
    assert run["experiment"] == {"id": "ab-1", "arm": "candidate", "block": 3}
    assert "trace_files" not in run
    r = client.post("/api/v1/runs", json=minimal_run(experiment={"id": "x", "arm": "treatment",
                                                                 "block": 1}))
    assert r.status_code == 422 and r.json()["error"]["field"].startswith("experiment")
    r = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v", "run_ids": [1],
                                          "treshold": {}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "treshold"


def test_writes_never_reopen_once_a_token_existed(client, settings):
    from service.db import make_engine, session_factory, transaction
    from service.usecases import tokens

    assert client.post("/api/v1/runs", json=minimal_run()).status_code == 201
    # a request through a proxy is never local, whatever the bind address
    r = client.post("/api/v1/runs", json=minimal_run(started_at="2026-11-03T00:00:00Z"),
                    headers={"X-Forwarded-For": "203.0.113.9"})
    assert r.status_code == 401
    eng = make_engine(settings.database_url)
    with transaction(session_factory(eng)) as s:
        tokens.create(s, "ci", "write")
    with transaction(session_factory(eng)) as s:
        assert tokens.revoke(s, "ci") == 1
    eng.dispose()
    client.app.state.no_tokens_until = 0.0
    r = client.post("/api/v1/runs", json=minimal_run(started_at="2026-11-04T00:00:00Z"))
    assert r.status_code == 401  # revoking every token does not reopen anonymous writes


def test_health_reports_migration_state(tmp_path):
    from fastapi.testclient import TestClient

    from service import migrate
    from service.config import Settings
    from service.main import create_app

    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(url, "0001")
    app = create_app(Settings(database_url=url, data_dir=tmp_path / "d"))
    with TestClient(app, **LOCAL) as c:
        r = c.get("/api/v1/health")
        assert r.status_code == 503
        err = r.json()["error"]
        assert err["status"] == 503 and err["code"] == "unmigrated"
        assert "revision 0001" in err["message"] and "perfwarden db upgrade" in err["message"]
        migrate.upgrade(url)
        r = c.get("/api/v1/health")
        assert r.status_code == 200 and r.json()["database"]["revision"] == migrate.head()
        from service.version import VERSION
        assert r.json()["version"] == VERSION != "0+unknown"
    app.state.engine.dispose()


def test_delete_run(client, settings):
    from tests.conftest import H200

    ids = [client.post("/api/v1/runs", json=minimal_run(started_at=f"2026-11-0{i + 1}T00:00:00Z")
                       ).json()["id"] for i in range(3)]
    raw = (H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz").read_bytes()
    up = client.post(f"/api/v1/runs/{ids[0]}/traces?filename=t.sqlite.gz", content=raw)
    assert up.status_code == 202  # analysis: a job
    drain_jobs(client.app)
    assert client.get(f"/api/v1/traces/{up.json()['id']}/timeline").status_code == 200
    assert any((settings.data_dir / "timelines").glob("*.json"))  # kept for the next page
    client.post("/api/v1/baselines", json={"name": "v", "benchmark": "bench-a", "run_ids": ids[:2]})
    r = client.delete(f"/api/v1/runs/{ids[0]}")
    assert r.status_code == 409 and "baseline(s) v" in r.json()["error"]["message"]
    r = client.delete(f"/api/v1/runs/{ids[0]}?force=true")
    assert r.status_code == 200 and r.json()["trace_files_removed"] == 1
    assert client.get(f"/api/v1/runs/{ids[0]}").status_code == 404
    assert client.get("/api/v1/baselines/bench-a/v").json()["run_ids"] == [ids[1]]
    assert count_rows(settings.database_url, "traces") == 0
    assert count_rows(settings.database_url, "samples") == 6
    # the trace file and everything derived from it (its timelines) are gone
    assert [p for p in settings.data_dir.rglob("*") if p.is_file()] == []
    assert client.delete(f"/api/v1/runs/{ids[2]}").status_code == 200
    assert client.delete(f"/api/v1/runs/{ids[2]}").status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/runs/1"])
def test_delete_needs_write_scope(client, settings, path):
    from service.db import make_engine, session_factory, transaction
    from service.usecases import tokens

    eng = make_engine(settings.database_url)
    with transaction(session_factory(eng)) as s:
        read = tokens.create(s, "ro", "read")
    eng.dispose()
    client.app.state.no_tokens_until = 0.0
    assert client.delete(path).status_code == 401
    assert client.delete(path, headers={"Authorization": f"Bearer {read}"}).status_code == 403


def test_batch_is_all_or_nothing(client, settings):
    good = [minimal_run(started_at=f"2026-11-0{i + 1}T00:00:00Z", idempotency_key=f"k{i}")
            for i in range(3)]
    bad = [good[0], {**good[1], "metrics": {"tok_s": {"samples": [float("nan")]}}}, good[2]]
    r = client.post("/api/v1/runs/batch", content=json.dumps({"runs": bad}).replace("NaN", '"x"'),
                    headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["field"].startswith("runs.1.metrics")
    wrong_dir = [good[0], minimal_run(metrics={"tok_s": {"direction": "lower", "samples": [1]}})]
    r = client.post("/api/v1/runs/batch", json={"runs": wrong_dir})
    assert r.status_code == 422 and r.json()["error"]["field"] == "runs.1.metrics.tok_s.direction"
    assert count_rows(settings.database_url, "runs") == 0
    r = client.post("/api/v1/runs/batch", json={"runs": good + [good[0]]})
    assert r.status_code == 201
    ids = r.json()["ids"]
    assert len(set(ids)) == 3 and ids[3] == ids[0]
    assert count_rows(settings.database_url, "runs") == 3
    r = client.post("/api/v1/runs/batch", json={"runs": good})
    assert r.status_code == 200 and r.json()["ids"] == ids[:3]  # a retry stores nothing
    changed = [good[0], {**good[1], "label": "other"}]
    r = client.post("/api/v1/runs/batch", json={"runs": changed})
    assert r.status_code == 409 and r.json()["error"]["field"] == "runs.1.idempotency_key"
    assert count_rows(settings.database_url, "runs") == 3


def test_a_batch_stores_what_one_record_stores(client, settings):
    """The batch path (COPY on PostgreSQL) and the one-record path (INSERT) store the same row:
    JSON columns as the same text, a missing determinism as JSON null, a missing bisect as SQL
    NULL, the same figures; and the read API gives the same record back."""
    from sqlalchemy import create_engine, text

    rec = minimal_run(commit="c0ffee1", label="x", determinism=None,
                      config={"tp": 8, "batch_size": 4, "note": "é \"q\" \\ tab\t"},
                      started_at="2026-11-01T00:00:00Z")
    bis = {**rec, "bisect": {"id": "b1", "commit": "c0ffee1"}}
    one = client.post("/api/v1/runs", json=rec).json()["id"]
    ids = client.post("/api/v1/runs/batch", json={"runs": [{**rec, "label": "y"}, bis]}).json()["ids"]
    assert len(ids) == 2 and ids[0] < ids[1] and one < ids[0]
    cols = ("config::text, hardware::text, environment::text, extra::text, "
            "determinism IS NULL, trace_summary IS NULL, bisect IS NULL, started_at, \"commit\"")
    if settings.database_url.startswith("sqlite"):
        cols = cols.replace("::text", "")
    eng = create_engine(settings.database_url)
    with eng.connect() as con:
        rows = {rid: tuple(con.execute(text(f"SELECT {cols} FROM runs WHERE id = :i"),
                                       {"i": rid}).one()) for rid in [one, *ids]}
        figures = [con.execute(text("SELECT metric, n, mean, median, stdev FROM run_metrics "
                                    "WHERE run_id = :i"), {"i": rid}).all() for rid in [one, *ids]]
    eng.dispose()
    assert rows[one] == rows[ids[0]]
    assert rows[ids[1]][:6] == rows[one][:6] and not rows[ids[1]][6] and rows[one][6]
    assert figures[0] == figures[1] == figures[2]
    a, b = (client.get(f"/api/v1/runs/{rid}").json() for rid in (one, ids[0]))
    assert {k: v for k, v in a.items() if k not in ("id", "label", "created_at")} == \
        {k: v for k, v in b.items() if k not in ("id", "label", "created_at")}


def test_a_write_is_committed_before_its_answer_is_sent(live_server, settings):
    """A client that got 2xx reads its write back at once, and a commit that fails is never
    answered 2xx (the request's transaction ends before the response, not after it)."""
    import threading
    import time

    import httpx
    from sqlalchemy import event

    url, app = live_server
    slow, fail = threading.Event(), threading.Event()

    def before_commit(session):
        if fail.is_set():
            raise RuntimeError("the commit failed")
        if slow.is_set():
            time.sleep(0.5)

    rid = httpx.post(f"{url}/api/v1/runs", json=minimal_run()).json()["id"]
    event.listen(app.state.sessions, "before_commit", before_commit)  # this test's app only
    base = f"{url}/api/v1/baselines"
    body = {"name": "v17", "benchmark": "bench-a", "run_ids": [rid]}
    assert httpx.post(base, json=body).status_code == 201
    slow.set()  # each request on a connection of its own, as the CLI's commands make them
    assert httpx.delete(f"{base}/bench-a/v17").status_code == 204
    assert httpx.get(f"{base}/bench-a/v17").status_code == 404  # not before the commit ended
    slow.clear()
    fail.set()
    r = httpx.post(base, json=body)
    fail.clear()
    assert r.status_code == 500, r.text
    assert httpx.get(f"{base}/bench-a/v17").status_code == 404
