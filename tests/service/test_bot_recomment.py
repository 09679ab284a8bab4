"""The service's PR comment said the profiler evidence was pending; when the trace's analysis
job ends, the same comment is edited with the evidence (the local GitHub stand-in, real jobs)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LOCAL, drain_jobs, h200_records
from tests.github_standin import TOKEN, FakeGitHub

TRACE = Path(__file__).resolve().parents[1] / "data" / "kineto_1layer_M4.json.gz"


@pytest.fixture
def gh():
    f = FakeGitHub()
    yield f
    f.close()


def _app(settings, gh):
    from pydantic import SecretStr

    from service.main import create_app

    settings.github_token = SecretStr(TOKEN)
    settings.github_api_url = gh.url
    settings.github_repos = "acme/engine"
    settings.dashboard_url = "http://dash.local"
    settings.jobs_in_process = False  # the jobs run when the test drains them
    return create_app(settings)


def _pr_run(c, rec: dict, pr: int) -> int:
    body = {**rec, "repository": "acme/engine", "pr": pr, "commit": f"c0ffee{pr}",
            "label": f"pr-{pr}"}
    res = c.post("/api/v1/runs", json=body)
    assert res.status_code == 201, res.text
    rid = res.json()["id"]
    up = c.post(f"/api/v1/runs/{rid}/traces?filename={TRACE.name}", content=TRACE.read_bytes(),
                headers={"Content-Type": "application/octet-stream"})
    assert up.status_code in (201, 202), up.text
    return rid


def test_the_comment_is_edited_when_the_analysis_lands(settings, gh):
    from fastapi.testclient import TestClient

    from service.github.auto import post_for_run

    recs = h200_records("noise", "graphs")
    app = _app(settings, gh)
    with TestClient(app, **LOCAL) as c:
        base = [c.post("/api/v1/runs", json=r).json()["id"] for r in recs
                if r["label"].startswith("aa")][:4]
        c.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                          "run_ids": base})
        drain_jobs(app)
        aa = next(r for r in recs if r["label"].startswith("aa"))
        rid = _pr_run(c, aa, 42)  # no bot baseline yet: no comment job queued at ingest
        other = _pr_run(c, aa, 43)  # a PR whose comment was never posted
        settings.bot_baseline = "v1"
        post_for_run(app.state.sessions, settings, rid)  # the comment, the trace still pending
        (comment,) = gh.comments.values()
        assert "**Profiler evidence pending: 1 trace(s) of run(s)" in comment["body"]
        assert "this comment is edited when they are" in comment["body"]
        posts = sum(m == "PATCH" for m, _ in gh.requests)

        drain_jobs(app)  # the analysis jobs, then the comment job they queue
        trace = c.get(f"/api/v1/runs/{rid}").json()["traces"][0]
        assert trace["state"] == "done"
        assert c.get(f"/api/v1/runs/{other}").json()["traces"][0]["state"] == "done"
    (edited,) = gh.comments.values()  # the same comment, edited in place
    assert edited["id"] == comment["id"]
    assert sum(m == "PATCH" for m, _ in gh.requests) == posts + 1
    assert "pending" not in edited["body"].lower()
    assert f"http://dash.local/api/v1/traces/{trace['id']}" in edited["body"]
    # PR 43 had no comment: its analysis posts none
    assert not any("/issues/43/" in path for _, path in gh.requests)
