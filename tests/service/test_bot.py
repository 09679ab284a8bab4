"""The PR comment bot and the check run against a local HTTP server that speaks GitHub's API."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from service.github_rest import GitHub, GitHubError
from tests.conftest import LOCAL, drain_jobs, h200_records
from tests.github_standin import TOKEN, FakeGitHub

# PostgreSQL copies find nothing more here: the comment's and the check's text come from the gate's
# answer, whose queries run on both databases in test_gate.py and test_comparisons.py.
pytestmark = pytest.mark.one_database


@pytest.fixture
def gh():
    f = FakeGitHub()
    yield f
    f.close()


def test_upsert_finds_marker_across_pages(gh):
    with GitHub(TOKEN, gh.url, backoff_s=0) as g:
        for i in range(5):
            g.create("acme/engine", 7, f"unrelated {i}")
        c1, created1 = g.upsert("acme/engine", 7, "<!-- m -->", "<!-- m -->\nfirst")
        for i in range(3):
            g.create("acme/engine", 7, f"later {i}")
        c2, created2 = g.upsert("acme/engine", 7, "<!-- m -->", "<!-- m -->\nsecond")
    assert created1 and not created2 and c1["id"] == c2["id"]
    assert sum("<!-- m -->" in c["body"] for c in gh.comments.values()) == 1
    assert gh.comments[c1["id"]]["body"].endswith("second")


def test_retries_5xx_then_succeeds():
    f = FakeGitHub(fail_first=2)
    try:
        with GitHub(TOKEN, f.url, backoff_s=0) as g:
            assert g.create("a/b", 1, "x")["body"] == "x"
        assert len(f.requests) == 3
    finally:
        f.close()


@pytest.mark.parametrize("token,status,match", [("wrong", None, "401"), (TOKEN, 404, "404")])
def test_errors_are_clear_and_never_show_the_token(token, status, match):
    f = FakeGitHub(status=status)
    try:
        with pytest.raises(GitHubError) as e:
            with GitHub(token, f.url, backoff_s=0) as g:
                g.comments("a/b", 1)
        assert match in str(e.value) and token not in str(e.value)
    finally:
        f.close()


def test_two_runs_for_a_pr_leave_one_comment(client, gh, monkeypatch, capsys):
    from service.github.comment import post_comment

    recs = h200_records("noise", "graphs")
    ids = {}
    for r in recs:
        ids.setdefault(r["label"].split("-")[0], []).append(
            client.post("/api/v1/runs", json=r).json()["id"])
    client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                           "run_ids": ids["aa"][:4]})

    def api(server, method, path, **kw):
        r = client.request(method, path, **kw)
        assert r.status_code == 200, r.text
        return r.json()

    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", gh.url)
    args = SimpleNamespace(server="http://perfwarden.local", benchmark="moe-decode-noise",
                           baseline="v1", repo="acme/engine", pr=150,
                           dashboard_url="http://dash.local", dry_run=False, run=[ids["aa"][4]])
    assert post_comment(args, api) == 0
    args.run = [ids["plant3"][0]]
    assert post_comment(args, api) == 0
    bodies = [c["body"] for c in gh.comments.values()]
    assert len(bodies) == 1
    body = bodies[0]
    assert "**FAIL**" in body and "regression" in body and "-3." in body
    assert "KV-cache capacity:** unchanged at 16,283,844" in body
    assert f"run {ids['plant3'][0]}: 5/5 bitwise identical" in body
    assert "http://dash.local/compare?benchmark=moe-decode-noise&baseline=v1" in body
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err


def test_comment_shows_varied_keys_both_sides(client, capsys):
    """The shared-expert PR's question in a PR comment: late vs overlap, both values shown."""
    import json

    from service.github.comment import post_comment
    from tests.conftest import H200

    ids: dict[str, list[int]] = {}
    for f in sorted((H200 / "ab").glob("*.json")):
        for rec in json.loads(f.read_text()):
            ids.setdefault(rec["label"], []).append(client.post("/api/v1/runs", json=rec).json()["id"])
    client.post("/api/v1/baselines", json={"name": "v17", "benchmark": "moe-decode-ab",
                                           "run_ids": ids["v17-overlap"]})

    def api(server, method, path, **kw):
        r = client.request(method, path, **kw)
        assert r.status_code == 200, r.text
        return r.json()

    args = SimpleNamespace(server="http://perfwarden.local", benchmark="moe-decode-ab",
                           baseline="v17", repo="acme/engine", pr=150, vary=["shared_experts"],
                           dashboard_url="http://dash.local", dry_run=True, run=ids["pr-late"])
    assert post_comment(args, api) == 0
    body = capsys.readouterr().out
    assert "Varied on purpose: `shared_experts`" in body
    # the keys every row shares are said once, above the table; rows keep only what differs
    assert body.count("shared_experts=overlap→late") == 1
    header = next(line for line in body.splitlines() if line.startswith("Every row: "))
    assert "shared_experts=overlap→late" in header and "M=" not in header
    rows = [line for line in body.splitlines() if line.startswith("| `")]
    assert rows and all("shared_experts" not in r and "dtype" not in r for r in rows)
    assert {r.split(" | ")[1] for r in rows} == {"M=1", "M=8"}
    assert "**FAIL**" in body and "-0.59%" in body and "vary=shared_experts" in body


def test_comment_reports_an_experiment(client, capsys):
    import json

    from service.github.comment import post_comment
    from tests.conftest import H200

    recs = json.loads((H200 / "experiment" / "plant1.json").read_text())
    client.post("/api/v1/runs/batch", json={"runs": recs})

    def api(server, method, path, **kw):
        r = client.request(method, path, **kw)
        assert r.status_code == 200, r.text
        return r.json()

    args = SimpleNamespace(server="http://perfwarden.local", benchmark=None, baseline=None,
                           run=None, experiment="plant1", repo="acme/engine", pr=150, vary=None,
                           dashboard_url="http://dash.local", dry_run=True)
    assert post_comment(args, api) == 0
    body = capsys.readouterr().out
    assert "<!-- perfwarden:moe-decode-experiment:experiment:plant1 -->" in body
    assert "Interleaved experiment `plant1`" in body and "**FAIL**" in body and "-1.36%" in body
    assert "http://dash.local/experiments/plant1" in body


def test_service_posts_by_itself_when_a_pr_run_arrives(settings, gh):
    from fastapi.testclient import TestClient
    from pydantic import SecretStr

    from service.main import create_app

    settings.github_token = SecretStr(TOKEN)
    settings.github_api_url = gh.url
    settings.bot_baseline = "v1"
    settings.github_repos = "other/repo, Acme/Engine"  # the allow-list ignores case
    settings.dashboard_url = "http://dash.local"
    recs = h200_records("noise", "graphs")
    with TestClient(create_app(settings), **LOCAL) as c:
        ids = {}
        for r in recs:
            ids.setdefault(r["label"].split("-")[0], []).append(
                c.post("/api/v1/runs", json=r).json()["id"])
        c.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                          "run_ids": ids["aa"][:4]})
        pr_ids = []
        for label in ("aa", "plant3"):
            r = next(x for x in recs if x["label"].startswith(label))
            body = {**r, "repository": "acme/engine", "pr": 42, "commit": f"c0ffee-{label}",
                    "label": f"pr-42-{label}"}
            res = c.post("/api/v1/runs", json=body)
            assert res.status_code == 201
            pr_ids.append(res.json()["id"])
        drain_jobs(c.app)  # the comment is a durable job
        bodies = [x["body"] for x in gh.comments.values()]
        assert len(bodies) == 1  # edited in place, never a second comment
        assert "**FAIL**" in bodies[0] and "c0ffee-plant3" in bodies[0]
        # the older commit's job, run late (two workers, a retry), posts the newest commit's verdict
        from service.github.auto import post_for_run

        post_for_run(c.app.state.sessions, settings, pr_ids[0])
    bodies = [x["body"] for x in gh.comments.values()]
    assert len(bodies) == 1
    assert "**FAIL**" in bodies[0] and "c0ffee-plant3" in bodies[0]


def test_comment_trace_links_name_side_and_rank_through_the_dashboard():
    from service.gate.schemas import CompareOut
    from service.github.markdown import render

    def brief(i):
        return {"id": i, "commit": "abc1234", "branch": "main", "label": None, "started_at": None,
                "hardware": {"gpu": "NVIDIA H200", "gpu_count": 2}, "config": {"tp": 2},
                "determinism": None}

    cmp = CompareOut.model_validate({
        "verdict": "pass", "benchmark": "b", "baseline": "v17", "baseline_run_ids": [1],
        "candidate_run_ids": [2], "correction": "none", "alpha": 0.05, "metrics": [],
        "distributions": [], "trace_diff": None, "baseline_runs": [brief(1)],
        "candidate_runs": [brief(2)],
        "traces": {1: [{"id": 10, "filename": "nsys_M1.sqlite", "sha256": "x"}],
                   2: [{"id": 11, "filename": "trace_M1_rank0.json.gz", "sha256": "y"},
                       {"id": 12, "filename": "trace_M1_rank1.json.gz", "sha256": "z"}]}})
    body = render(cmp, dashboard_url="https://dash.example/", server_url="http://api.internal:8000")
    assert ("**Traces:** [baseline run 1](https://dash.example/api/v1/traces/10), "
            "[candidate run 2, rank 0](https://dash.example/api/v1/traces/11), "
            "[candidate run 2, rank 1](https://dash.example/api/v1/traces/12)") in body
    assert "api.internal" not in body


def _seed_noise(client):
    ids: dict[str, list[int]] = {}
    for r in h200_records("noise", "graphs"):
        ids.setdefault(r["label"].split("-")[0], []).append(
            client.post("/api/v1/runs", json=r).json()["id"])
    client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                           "run_ids": ids["aa"][:4]})
    return ids


def _api(client):
    def api(server, method, path, **kw):
        r = client.request(method, path, **kw)
        assert r.status_code == 200, r.text
        return r.json()
    return api


SHA = "6420fe5" + "0" * 33


def test_check_run_is_created_then_updated_in_place(client, gh, monkeypatch, capsys, tmp_path):
    from service.github.comment import post_comment

    ids = _seed_noise(client)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", gh.url)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    args = SimpleNamespace(server="http://perfwarden.local", benchmark="moe-decode-noise",
                           baseline="v1", repo="acme/engine", pr=None, check=True, sha=SHA,
                           dashboard_url="http://dash.local", dry_run=False,
                           run=[ids["plant3"][0]])
    assert post_comment(args, _api(client)) == 0
    assert len(gh.check_runs) == 1 and not gh.comments
    (run,) = gh.check_runs.values()
    assert run["name"] == "perfwarden: moe-decode-noise" and run["head_sha"] == SHA
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    assert run["output"]["title"].startswith("FAIL vs baseline v1: 1 of")
    assert "| `tok_s` |" in run["output"]["summary"] and "regression" in run["output"]["summary"]
    assert run["details_url"].startswith("http://dash.local/compare?benchmark=moe-decode-noise")
    assert "**FAIL**" in summary.read_text()

    args.run = [ids["aa"][4]]
    assert post_comment(args, _api(client)) == 0
    assert len(gh.check_runs) == 1  # the same check, edited
    (again,) = gh.check_runs.values()
    assert again["id"] == run["id"] and again["conclusion"] == "success"
    assert ("PATCH", f"/repos/acme/engine/check-runs/{run['id']}") in gh.requests
    assert summary.read_text().count("### ") == 2  # both reports appended to the job summary
    err = capsys.readouterr().err
    assert f"created check run {run['id']} (failure)" in err
    assert f"updated check run {run['id']} (success)" in err
    assert TOKEN not in err and not any(TOKEN in b for b in gh.bodies)


def test_check_falls_back_to_a_commit_status_without_the_checks_scope(client, monkeypatch,
                                                                     capsys):
    from service.github.comment import post_comment

    ids = _seed_noise(client)
    f = FakeGitHub(checks_forbidden=True)
    try:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", f.url)
        monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        args = SimpleNamespace(server="http://perfwarden.local", benchmark="moe-decode-noise",
                               baseline="v1", repo="acme/engine", pr=150, check=True, sha=SHA,
                               dashboard_url="http://dash.local", dry_run=False,
                               run=[ids["plant3"][0]])
        assert post_comment(args, _api(client)) == 0
        assert not f.check_runs and len(f.comments) == 1
        (st,) = f.statuses
        assert st["sha"] == SHA and st["context"] == "perfwarden: moe-decode-noise"
        assert st["state"] == "failure" and st["description"].startswith("FAIL")
        assert len(st["description"]) <= 140
        assert st["target_url"].startswith("http://dash.local/compare?")
        assert "commit status (failure" in capsys.readouterr().err
    finally:
        f.close()


def test_check_needs_a_commit(client, gh, monkeypatch):
    from collectors.errors import CliError
    from service.github.comment import post_comment

    ids = _seed_noise(client)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", gh.url)
    args = SimpleNamespace(server="http://perfwarden.local", benchmark="moe-decode-noise",
                           baseline="v1", repo="acme/engine", pr=None, check=True, sha=None,
                           dashboard_url=None, dry_run=False, run=[ids["aa"][4]])
    assert client.get(f"/api/v1/runs/{ids['aa'][4]}").json()["commit"] is None
    with pytest.raises(CliError, match="--sha"):
        post_comment(args, _api(client))
