"""Runs API on SQLite and PostgreSQL: storage, validation, idempotency, limits, auth, pagination."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import count_rows, minimal_run


def _count(url: str, table: str = "runs") -> int:
    return count_rows(url, table)


def test_store_and_read_back(client, settings):
    r = client.post("/api/v1/runs", json=minimal_run(label="pr-1", commit="abc1234"))
    assert r.status_code == 201
    rid = r.json()["id"]
    got = client.get(f"/api/v1/runs/{rid}").json()
    assert got["benchmark"] == "bench-a" and got["label"] == "pr-1"
    assert got["metrics"]["tok_s"]["samples"] == [100.0, 101.0, 99.5]
    assert got["metrics"]["tok_s"]["mean"] == pytest.approx(100.1666666)
    assert got["metrics"]["tok_s"]["median"] == 101.0 - 1.0
    assert got["started_at"].endswith("Z")
    assert _count(settings.database_url, "samples") == 3


def test_list_filters_and_pagination(client):
    for i in range(5):
        client.post("/api/v1/runs", json=minimal_run(label="a" if i % 2 else "b",
                                                     started_at=f"2026-11-0{i + 1}T00:00:00Z"))
    page = client.get("/api/v1/runs?limit=2&offset=1").json()
    assert page["count"] == 5 and len(page["data"]) == 2
    assert page["data"][0]["started_at"] == "2026-11-04T00:00:00Z"  # newest first
    assert client.get("/api/v1/runs?label=a").json()["count"] == 2
    assert client.get("/api/v1/runs?limit=1001").status_code == 422
    assert client.get("/api/v1/runs?benchmark=nope").json() == {"data": [], "count": 0}


@pytest.mark.parametrize("body,field", [
    ({"metrics": {"tok_s": {"samples": [1.0]}}}, "benchmark"),
    ({"benchmark": "b"}, "metrics"),
    ({"benchmark": "b", "metrics": {}}, "metrics"),
    ({"benchmark": "b", "metrics": {"tok_s": {"samples": []}}}, "metrics.tok_s.samples"),
    ({"benchmark": "b", "metrics": {"tok_s": {"samples": ["x"]}}}, "metrics.tok_s.samples.0"),
    ({"benchmark": "b", "metrics": {"tok_s": {"samples": [True]}}}, "metrics.tok_s.samples.0"),
    ({"benchmark": "b", "metrics": {"tok_s": {"direction": "lower", "samples": [1]}}},
     "metrics.tok_s.direction"),
    ({"benchmark": "b", "metrics": {"tok_s": {"unit": "tokens/s", "samples": [1]}}},
     "metrics.tok_s.unit"),
    ({"benchmark": "b", "metrics": {"my_metric": {"samples": [1]}}}, "metrics.my_metric.direction"),
    ({"benchmark": "x" * 201, "metrics": {"tok_s": {"samples": [1]}}}, "benchmark"),
    ({"benchmark": "b", "label": "l" * 201, "metrics": {"tok_s": {"samples": [1]}}}, "label"),
])
def test_malformed_runs_refused_and_nothing_stored(client, settings, body, field):
    r = client.post("/api/v1/runs", json=body)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["field"] == field and err["status"] == 422 and "\n" not in err["message"]
    assert _count(settings.database_url, "runs") == 0
    assert _count(settings.database_url, "samples") == 0


@pytest.mark.parametrize("raw", [b'{"benchmark": "b", "metrics": {"tok_s": {"samples": [NaN]}}}',
                                 b'{"benchmark": "b", "metrics": {"tok_s": {"samples": [Infinity]}}}',
                                 b"{oops", b"", b"[]"])
def test_non_finite_and_bad_json(client, settings, raw):
    r = client.post("/api/v1/runs", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert _count(settings.database_url, "runs") == 0


def test_oversized_body_is_413(client, settings):
    big = minimal_run(notes="x" * (9 << 20))
    r = client.post("/api/v1/runs", content=json.dumps(big))
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
    assert _count(settings.database_url, "runs") == 0


def test_idempotency(client, settings):
    body = minimal_run(idempotency_key="ci-1")
    a = client.post("/api/v1/runs", json=body)
    b = client.post("/api/v1/runs", json=body)
    assert a.status_code == 201 and b.status_code == 200 and a.json() == b.json()
    c = client.post("/api/v1/runs", json=minimal_run(idempotency_key="ci-1", label="other"))
    assert c.status_code == 409 and c.json()["error"]["field"] == "idempotency_key"
    assert _count(settings.database_url, "runs") == 1


def test_unknown_metric_registered_then_enforced(client):
    body = minimal_run(metrics={"foo_ms": {"unit": "ms", "direction": "lower", "samples": [1, 2]}})
    assert client.post("/api/v1/runs", json=body).status_code == 201
    body = minimal_run(metrics={"foo_ms": {"unit": "ms", "direction": "higher", "samples": [1]}})
    assert client.post("/api/v1/runs", json=body).status_code == 422


def test_series_split_by_config_and_gpu(client):
    a = client.post("/api/v1/runs", json=minimal_run()).json()["id"]
    b = client.post("/api/v1/runs", json=minimal_run(hardware={"gpu": "NVIDIA H100", "gpu_count": 1})).json()["id"]
    c = client.post("/api/v1/runs", json=minimal_run(config={"batch_size": 1, "tp": 1})).json()["id"]
    sa, sb, sc = (client.get(f"/api/v1/runs/{i}").json()["series_id"] for i in (a, b, c))
    assert sa != sb and sa == sc  # key order does not make another series


def test_error_shape_everywhere(client):
    for r in (client.get("/api/v1/runs/999"), client.get("/nope"),
              client.post("/api/v1/gate", json={}), client.delete("/api/v1/runs")):
        body = r.json()
        assert set(body) == {"error"} and set(body["error"]) == {"status", "code", "message", "field"}
        assert body["error"]["status"] == r.status_code
        assert "Traceback" not in r.text


def test_auth_rules(client, settings):
    from service.db import make_engine, session_factory, transaction
    from service.repositories import tokens

    assert client.post("/api/v1/runs", json=minimal_run()).status_code == 201  # open: no token
    sessions = session_factory(make_engine(settings.database_url))
    with transaction(sessions) as s:
        write = tokens.create(s, "ci", "write")
        read = tokens.create(s, "viewer", "read")
    client.app.state.no_tokens_until = 0.0  # the server trusts "no token" for up to a second
    assert client.post("/api/v1/runs", json=minimal_run()).status_code == 401
    r = client.post("/api/v1/runs", json=minimal_run(), headers={"Authorization": f"Bearer {read}"})
    assert r.status_code == 403
    r = client.post("/api/v1/runs", json=minimal_run(), headers={"Authorization": f"Bearer {write}"})
    assert r.status_code == 201
    assert client.post("/api/v1/runs", json=minimal_run(),
                       headers={"Authorization": "Bearer pw_wrong"}).status_code == 401
    assert client.get("/api/v1/runs").status_code == 200  # reads stay open
    eng = create_engine(settings.database_url)
    with eng.connect() as c:
        stored = [r[0] for r in c.execute(text("SELECT token_sha256 FROM api_tokens"))]
    eng.dispose()
    assert write not in stored and len(stored[0]) == 64


def test_non_loopback_needs_token(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    settings.bind_host = "0.0.0.0"
    settings.read_auth = True
    with TestClient(create_app(settings)) as c:
        assert c.post("/api/v1/runs", json=minimal_run()).status_code == 401
        assert c.get("/api/v1/runs").status_code == 401


def test_openapi_matches_spec(client):
    doc = client.get("/openapi.json").json()
    paths = doc["paths"]
    for p, methods in {"/api/v1/runs": {"get", "post"}, "/api/v1/runs/{run_id}": {"get"},
                       "/api/v1/runs/{run_id}/traces": {"post"}, "/api/v1/traces/{trace_id}": {"get"},
                       "/api/v1/traces/{trace_id}/timeline": {"get"},
                       "/api/v1/baselines": {"get", "post"},
                       "/api/v1/baselines/{benchmark}/{name}": {"put"}, "/api/v1/gate": {"post"}}.items():
        assert methods <= set(paths[p]), p
    run_in = doc["components"]["schemas"]["RunIn"]
    assert {"benchmark", "metrics"} <= set(run_in["required"])
    gate_out = doc["components"]["schemas"]["MetricVerdict"]["properties"]
    assert {"delta_pct", "ci_low_pct", "ci_high_pct", "p_value", "threshold_pct", "verdict"} <= set(gate_out)
    # roles, the spread's source, alpha and looks; looks and bisect tags on run records
    assert {"role", "spread_from", "spread_runs"} <= set(gate_out)
    assert {"alpha", "looks"} <= set(doc["components"]["schemas"]["GateOut"]["properties"])
    assert "looks" in doc["components"]["schemas"]["ExperimentTag"]["properties"]
    assert "bisect" in run_in["properties"]


def test_commits_match_both_ways(client):
    full = "e5c88311c77a0123456789abcdef0123456789ab"
    ids = {}
    for name, commit in (("full", full), ("short", full[:12]), ("tiny", full[:6]),
                         ("other", "f" * 40)):
        r = client.post("/api/v1/runs", json=minimal_run(commit=commit, label=name))
        ids[name] = r.json()["id"]

    def found(commit):
        page = client.get("/api/v1/runs", params={"commit": commit}).json()
        return {r["label"] for r in page["data"]}

    assert found(full) == {"full", "short"}  # a stored 12-character commit names the full SHA
    assert found(full[:7]) == {"full", "short"}  # a given prefix names the longer stored ones
    assert found(full[:12]) == {"full", "short"}
    assert found(full[:6]) == {"tiny"}  # under 7 characters: only the very same string
    # a baseline of commit:SHA and the bisect filter use the same rule
    g = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": f"commit:{full}",
                                          "run_ids": [ids["other"]]}).json()
    assert sorted(g["baseline_run_ids"]) == sorted([ids["full"], ids["short"]])


def test_postgresql_plans_each_statement_for_the_tables_as_they_are(settings):
    """No server-side prepared statements on PostgreSQL: a plan cached while `runs` was empty
    (a sequential scan) would be kept for the connection's life as the history grows."""
    from service.db import make_engine

    eng = make_engine(settings.database_url)
    with eng.connect() as con:
        raw = con.connection.driver_connection
        if settings.database_url.startswith("postgresql"):
            assert raw.prepare_threshold is None
            for _ in range(8):
                con.execute(text("SELECT count(*) FROM runs WHERE idempotency_key = :k"), {"k": "a"})
            assert con.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar() == 0
    eng.dispose()


def test_a_done_trace_is_never_shown_without_the_runs_summary(client, settings):
    """The run's row read, then its trace recorded done with the run's summary (one commit, by
    the analysis job): the answer built from that row still shows the summary, on SQLite (whose
    reads outside a write see each commit as it lands) and PostgreSQL (read committed)."""
    from datetime import datetime, timezone

    from service.db import make_engine, session_factory, transaction
    from service.runs import queries as runs_repo
    from service.runs.tables import Run
    from service.traces import queries as traces_repo

    rid = client.post("/api/v1/runs", json=minimal_run()).json()["id"]
    engine = make_engine(settings.database_url)
    sessions = session_factory(engine)
    try:
        with transaction(sessions) as s:
            trace_id = traces_repo.add(s, rid, "ab" * 32, "t.json", 10, "kineto", {},
                                       datetime.now(timezone.utc), state="pending").id
        reader = sessions()
        row = reader.get(Run, rid)  # the request's row, before the job records the trace
        assert row is not None and row.trace_summary is None
        with transaction(sessions) as s:
            t = traces_repo.get(s, trace_id)
            traces_repo.mark_done(t, "kineto", {"steps": 3})
            traces_repo.set_run_summary(s.get(Run, rid), {"steps": 3})
        out = runs_repo.run_out(reader, row)
        reader.close()
        assert out["traces"][0]["state"] == "done"
        assert out["trace_summary"] == {"steps": 3}
    finally:
        engine.dispose()
