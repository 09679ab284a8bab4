"""The guard and the auth rules: what a page on another origin, a request from another machine,
a wrong Host, an oversized body, an unauthenticated read beyond loopback, an ingest token of
another benchmark and a run naming a foreign repository each get."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from tests.conftest import LOCAL, ROOT, count_rows, drain_jobs, minimal_run
from tests.github_standin import TOKEN, FakeGitHub

# PostgreSQL copies find nothing more here: the guard and the auth rules read no SQL of their own;
# tokens and runs are stored as test_runs_api.py stores them on both databases.
pytestmark = pytest.mark.one_database


def _client(settings, **kw):
    from fastapi.testclient import TestClient

    from service.main import create_app

    return TestClient(create_app(settings), **{**LOCAL, **kw})


def _token(settings, name: str, scope: str, benchmarks: list[str] | None = None) -> str:
    from service.db import make_engine, session_factory, transaction
    from service.usecases import tokens

    eng = make_engine(settings.database_url)
    try:
        with transaction(session_factory(eng)) as s:
            return tokens.create(s, name, scope, benchmarks)
    finally:
        eng.dispose()


def test_a_page_on_another_origin_cannot_write(client, settings):
    import json

    body = json.dumps(minimal_run())
    r = client.post("/api/v1/runs", content=body, headers={
        "Content-Type": "text/plain", "Origin": "http://evil.example"})
    assert r.status_code == 415 and "application/json" in r.json()["error"]["message"]
    r = client.post("/api/v1/runs", content=body, headers={
        "Content-Type": "application/json", "Origin": "http://evil.example"})
    assert r.status_code == 403 and "evil.example" in r.json()["error"]["message"]
    r = client.post("/api/v1/runs", content=body, headers={
        "Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    # a trace upload takes any content type, and is refused from another origin all the same
    r = client.post("/api/v1/runs/1/traces?filename=t.json", content=b"{}", headers={
        "Content-Type": "text/plain", "Origin": "null"})
    assert r.status_code == 403
    assert count_rows(settings.database_url, "runs") == 0
    # the same page of this server (its own origin) writes while no token exists
    r = client.post("/api/v1/runs", content=body, headers={
        "Content-Type": "application/json", "Origin": "http://localhost"})
    assert r.status_code == 201


def test_another_machine_cannot_write_anonymously(settings):
    with _client(settings, client=("203.0.113.9", 4000)) as c:
        r = c.post("/api/v1/runs", json=minimal_run())
        assert r.status_code == 401 and "203.0.113.9" in r.json()["error"]["message"]
        assert c.get("/api/v1/runs").status_code == 200  # reads stay open on a loopback bind
        c.app.state.engine.dispose()
    assert count_rows(settings.database_url, "runs") == 0


@pytest.mark.parametrize("base", ["http://evil.example", "http://127.0.0.1.evil.example:8000"])
def test_a_host_that_is_not_loopback_cannot_write_anonymously(settings, base):
    with _client(settings, base_url=base) as c:
        r = c.post("/api/v1/runs", json=minimal_run())  # refused by the Host allow-list first
        assert r.status_code == 400 and "Host" in r.json()["error"]["message"]
        c.app.state.engine.dispose()
    for base in ("http://127.0.0.1:8000", "http://[::1]:8000"):
        with _client(settings, base_url=base) as c:
            assert c.post("/api/v1/runs", json=minimal_run(started_at="2026-01-01T00:00:00Z")
                          ).status_code in (200, 201)
            c.app.state.engine.dispose()


def test_every_route_caps_its_body(client, settings):
    big = b'{"benchmark": "' + b"a" * (31 << 20) + b'"}'
    r = client.post("/api/v1/gate", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "too_large" and "\n" not in r.text
    # a chunked body declares no size: it is counted while it arrives

    def chunks():
        for _ in range(40):
            yield b" " * (1 << 20)

    r = client.post("/api/v1/gate", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    r = client.post("/api/v1/gate", content=b"{}", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    # the batch route has its own larger limit; a body under it goes through
    r = client.post("/api/v1/runs/batch", json={"runs": [minimal_run()]})
    assert r.status_code == 201


def test_reads_beyond_loopback_need_a_token(settings, monkeypatch):
    from service.config import Settings

    wide = settings.model_copy(update={"bind_host": "0.0.0.0"})
    with _client(wide) as c:
        r = c.get("/api/v1/runs")
        assert r.status_code == 401 and "PERFWARDEN_READ_AUTH=off" in r.json()["error"]["message"]
        assert c.get("/").status_code == 401  # the dashboard too
        # anonymous writes are closed beyond loopback, even from this machine
        assert c.post("/api/v1/runs", json=minimal_run()).status_code == 401
        token = _token(settings, "viewer", "read")
        assert c.get("/api/v1/runs", headers={"Authorization": f"Bearer {token}"}
                     ).status_code == 200
        c.cookies.set("perfwarden_token", token)
        assert c.get("/").status_code == 200
        assert c.get("/api/v1/runs").status_code == 200
        # a cookie is for reading: a write needs the bearer header
        assert c.post("/api/v1/runs", json=minimal_run()).status_code == 401
        c.app.state.engine.dispose()
    monkeypatch.setenv("PERFWARDEN_READ_AUTH", "off")
    off = Settings(database_url=settings.database_url, data_dir=settings.data_dir,
                   bind_host="0.0.0.0")
    assert off.read_auth is False
    with _client(off) as c:
        assert c.get("/api/v1/runs").status_code == 200
        c.app.state.engine.dispose()


def test_an_ingest_token_posts_only_its_benchmarks(client, settings):
    rid = client.post("/api/v1/runs", json=minimal_run(benchmark="bench-b")).json()["id"]
    ingest = {"Authorization": f"Bearer {_token(settings, 'ci-a', 'ingest', ['bench-a'])}"}
    client.app.state.no_tokens_until = 0.0
    r = client.post("/api/v1/runs", json=minimal_run(benchmark="bench-b",
                                                      started_at="2026-02-01T00:00:00Z"),
                    headers=ingest)
    assert r.status_code == 403 and "bench-b" in r.json()["error"]["message"]
    r = client.post("/api/v1/runs/batch", json={"runs": [
        minimal_run(started_at="2026-02-02T00:00:00Z"),
        minimal_run(benchmark="bench-b", started_at="2026-02-03T00:00:00Z")]}, headers=ingest)
    assert r.status_code == 403
    r = client.post(f"/api/v1/runs/{rid}/traces?filename=t.json", content=b"{}", headers=ingest)
    assert r.status_code == 403
    assert count_rows(settings.database_url, "runs") == 1
    r = client.post("/api/v1/runs", json=minimal_run(started_at="2026-02-04T00:00:00Z"),
                    headers=ingest)
    assert r.status_code == 201
    mine = r.json()["id"]
    assert client.get("/api/v1/runs", headers=ingest).status_code == 200
    # the admin-only writes: baselines, run deletion, benchmark settings, alert evaluation
    for method, path, body in [
            ("POST", "/api/v1/baselines", {"name": "v", "benchmark": "bench-a",
                                           "run_ids": [mine]}),
            ("DELETE", f"/api/v1/runs/{mine}", None),
            ("PATCH", "/api/v1/benchmarks/bench-a", {"default_branch": "dev"}),
            ("POST", "/api/v1/alerts/evaluate", None)]:
        r = client.request(method, path, json=body, headers=ingest)
        assert r.status_code == 403 and "admin" in r.json()["error"]["message"], path
    write = {"Authorization": f"Bearer {_token(settings, 'ci', 'write')}"}
    assert client.post("/api/v1/runs", json=minimal_run(benchmark="bench-b",
                                                         started_at="2026-02-05T00:00:00Z"),
                       headers=write).status_code == 201
    assert client.delete(f"/api/v1/runs/{mine}", headers=write).status_code == 403
    admin = {"Authorization": f"Bearer {_token(settings, 'ops', 'admin')}"}
    assert client.post("/api/v1/baselines", json={"name": "v", "benchmark": "bench-a",
                                                  "run_ids": [mine]},
                       headers=admin).status_code == 201
    assert client.delete(f"/api/v1/runs/{mine}?force=true", headers=admin).status_code == 200


def _pr_run(c, repository: str, when: str) -> int:
    r = c.post("/api/v1/runs", json=minimal_run(
        repository=repository, pr=7, commit=f"c-{when}", label="pr", started_at=when,
        metrics={"tok_s": {"unit": "tok/s", "direction": "higher", "samples": [80.0, 81, 79]}}))
    assert r.status_code == 201
    return r.json()["id"]


@pytest.mark.parametrize("allowed", ["acme/engine", ""])
def test_the_bot_posts_only_to_allowed_repositories(settings, caplog, allowed):
    from pydantic import SecretStr

    from service.github.auto import post_for_run

    gh = FakeGitHub()
    try:
        s = settings.model_copy(update={"github_token": SecretStr(TOKEN), "github_api_url": gh.url,
                                        "bot_baseline": "v1", "github_repos": allowed})
        with _client(s) as c, caplog.at_level(logging.WARNING, "perfwarden"):
            ids = [c.post("/api/v1/runs", json=minimal_run(
                started_at=f"2026-03-0{i + 1}T00:00:00Z")).json()["id"] for i in range(3)]
            assert c.post("/api/v1/baselines", json={"name": "v1", "benchmark": "bench-a",
                                                     "run_ids": ids}).status_code == 201
            evil = _pr_run(c, "evil/elsewhere", "2026-03-05T00:00:00Z")
            drain_jobs(c.app)
            post_for_run(c.app.state.sessions, s, evil)  # a job queued before the list changed
            assert not gh.requests
            assert "evil/elsewhere" in caplog.text and "PERFWARDEN_GITHUB_REPOS" in caplog.text
            _pr_run(c, "acme/engine", "2026-03-06T00:00:00Z")
            drain_jobs(c.app)
            c.app.state.engine.dispose()
        posted = [p for m, p in gh.requests if m == "POST"]
        assert all("/repos/acme/engine/" in p for p in posted)
        assert len(gh.comments) == (1 if allowed else 0)
    finally:
        gh.close()


def test_token_cli_takes_scopes_and_benchmarks(tmp_path):
    env = {**os.environ, "PERFWARDEN_DATABASE_URL": f"sqlite:///{tmp_path / 't.db'}"}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "service.cli", "tokens", *args], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)

    r = run("create", "--name", "ci", "--scope", "ingest")
    assert r.returncode != 0 and "--benchmark" in r.stderr and "Traceback" not in r.stderr
    r = run("create", "--name", "ops", "--scope", "admin", "--benchmark", "x")
    assert r.returncode != 0 and "every benchmark" in r.stderr
    r = run("create", "--name", "ci", "--scope", "ingest", "--benchmark", "b2",
            "--benchmark", "b1")
    assert r.returncode == 0 and r.stdout.startswith("pw_"), r.stderr
    assert "ingest for b1, b2" in r.stderr
    r = run("list")
    assert r.returncode == 0 and "\tci\tingest\tactive\t" in r.stdout
    assert r.stdout.rstrip().endswith("b1,b2")
