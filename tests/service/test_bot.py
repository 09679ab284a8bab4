"""The PR comment bot against a local HTTP server that speaks GitHub's issue-comment API."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from service.bot.github import GitHub, GitHubError
from tests.conftest import drain_jobs, h200_records

TOKEN = "ghp_secret_token_value_123"


class FakeGitHub:
    def __init__(self, per_page=2, fail_first=0, status=None):
        self.comments: dict[int, dict] = {}
        self.next_id = 1000
        self.per_page = per_page
        self.fail_first = fail_first
        self.status = status
        self.requests: list[tuple[str, str]] = []
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body, headers=None):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _guard(self):
                fake.requests.append((self.command, self.path))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self._send(401, {"message": "Bad credentials"})
                    return False
                if fake.fail_first > 0:
                    fake.fail_first -= 1
                    self._send(502, {"message": "Bad gateway"})
                    return False
                if fake.status:
                    self._send(fake.status, {"message": "Not Found"})
                    return False
                return True

            def do_GET(self):
                if not self._guard():
                    return
                path, _, q = self.path.partition("?")
                page = int(dict(p.split("=") for p in q.split("&") if p).get("page", 1))
                items = [c for c in fake.comments.values()]
                chunk = items[(page - 1) * fake.per_page: page * fake.per_page]
                headers = {}
                if page * fake.per_page < len(items):
                    headers["Link"] = (f'<http://127.0.0.1:{fake.port}{path}?per_page=100&page='
                                       f'{page + 1}>; rel="next"')
                self._send(200, chunk, headers)

            def do_POST(self):
                if not self._guard():
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                cid = fake.next_id
                fake.next_id += 1
                fake.comments[cid] = {"id": cid, "body": body["body"]}
                self._send(201, fake.comments[cid])

            def do_PATCH(self):
                if not self._guard():
                    return
                cid = int(self.path.rsplit("/", 1)[1])
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.comments[cid]["body"] = body["body"]
                self._send(200, fake.comments[cid])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


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
    from service.bot.comment import post_comment

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
    """The seed's question in a PR comment: late vs overlap, both values shown."""
    import json

    from service.bot.comment import post_comment
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
    assert body.count("shared_experts=overlap→late") >= 4  # tok_s and KV rows at M=1 and M=8
    assert "**FAIL**" in body and "-0.59%" in body and "vary=shared_experts" in body


def test_comment_reports_an_experiment(client, capsys):
    import json

    from service.bot.comment import post_comment
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
    settings.dashboard_url = "http://dash.local"
    recs = h200_records("noise", "graphs")
    with TestClient(create_app(settings)) as c:
        ids = {}
        for r in recs:
            ids.setdefault(r["label"].split("-")[0], []).append(
                c.post("/api/v1/runs", json=r).json()["id"])
        c.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                          "run_ids": ids["aa"][:4]})
        for label in ("aa", "plant3"):
            r = next(x for x in recs if x["label"].startswith(label))
            body = {**r, "repository": "acme/engine", "pr": 42, "commit": f"c0ffee-{label}",
                    "label": f"pr-42-{label}"}
            assert c.post("/api/v1/runs", json=body).status_code == 201
        drain_jobs(c.app)  # the comment is a durable job
    bodies = [x["body"] for x in gh.comments.values()]
    assert len(bodies) == 1  # edited in place, never a second comment
    assert "**FAIL**" in bodies[0] and "c0ffee-plant3" in bodies[0]


def test_comment_trace_links_name_side_and_rank_through_the_dashboard():
    from service.bot.markdown import render
    from service.schemas import CompareOut

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
