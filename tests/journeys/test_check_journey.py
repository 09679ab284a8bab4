"""A pull request's check, as a user meets it: collect on the node (the CPU collector), ingest
with identity, gate, `comment --check`, and the same check edited when the job runs again.

The change under test is planted through the collector: a smaller KV-cache budget
(`--kv-cache-gib 2`) halves `kv_capacity_tokens`, which the gate judges exactly; CPU timings on a
shared test machine are far too noisy to plant a change in tok/s. The check is keyed by the
commit, so the second run (the same head, the runner's memory budget put right) edits it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.github_standin import TOKEN, FakeGitHub

# PostgreSQL copies find nothing more here: the check run follows the gate's answer over the API,
# whose routes and use cases run on both databases in tests/service/.
pytestmark = pytest.mark.one_database

PW = [sys.executable, "-m", "service.cli"]
CPU = ["collect", "decode", "--device", "cpu", "--trials", "3", "--steps", "8", "--warmup", "2",
       "--quiet"]
JUDGE = ["--metric", "kv_capacity_tokens"]


def pw(*args, env=None):
    r = subprocess.run(PW + list(args), capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={**os.environ, **(env or {})})
    return r


def test_regression_fails_the_check_and_a_rerun_turns_it_green(live_server, tmp_path):
    url, _ = live_server
    gh = FakeGitHub()
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.url,
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    try:
        # main: three runs, stored with their identity and made the baseline
        r = pw(*CPU, "--batch-sizes", "1,1,1", "--out", str(tmp_path / "main.json"))
        assert r.returncode == 0, r.stderr
        r = pw("ingest", str(tmp_path / "main.json"), "--branch", "main", "--commit", "a" * 40,
               "--server", url)
        assert r.returncode == 0, r.stderr
        base = r.stdout.split()
        r = pw("baseline", "set", "main", "--benchmark", "moe-decode", "--server", url,
               *[x for i in base for x in ("--run", i)])
        assert r.returncode == 0, r.stderr

        sha = "b" * 40
        ident = ["--commit", sha, "--branch", "fix/kv", "--repository", "acme/engine", "--pr", "7",
                 "--server", url]

        def report(out: str):
            r = pw("ingest", out, *ident)
            assert r.returncode == 0, r.stderr
            ids = r.stdout.split()
            gate = pw("gate", "--server", url, "--benchmark", "moe-decode", "--baseline", "main",
                      *[x for i in ids for x in ("--run", i)], *JUDGE, env=env)
            c = pw("comment", "--server", url, "--benchmark", "moe-decode", "--baseline", "main",
                   *[x for i in ids for x in ("--run", i)], *JUDGE, "--repo", "acme/engine",
                   "--pr", "7", "--check", "--dashboard-url", "http://dash.local", env=env)
            assert c.returncode == 0, c.stderr  # posted, whatever the verdict
            return ids, gate, c

        # the PR's first run: the KV cache halved -> a regression, a red check
        r = pw(*CPU, "--batch-sizes", "1", "--kv-cache-gib", "2", "--out", str(tmp_path / "b1.json"))
        assert r.returncode == 0, r.stderr
        ids1, gate, c = report(str(tmp_path / "b1.json"))
        assert gate.returncode == 1 and "regression" in gate.stdout
        run = json.loads(pw("gate", "--server", url, "--benchmark", "moe-decode", "--baseline",
                            "main", "--commit", sha, "--json", *JUDGE).stdout)
        assert run["candidate_run_ids"] == [int(i) for i in ids1]  # stored under the commit
        assert len(gh.check_runs) == 1
        (check,) = gh.check_runs.values()
        assert check["head_sha"] == sha and check["name"] == "perfwarden: moe-decode"
        assert check["status"] == "completed" and check["conclusion"] == "failure"
        assert "kv_capacity_tokens" in check["output"]["summary"]
        assert "-50.00%" in check["output"]["summary"]
        assert check["details_url"].startswith("http://dash.local/compare?")
        assert f"created check run {check['id']} (failure)" in c.stderr

        # the job runs again on the same head with the budget put right: the same check, green
        r = pw(*CPU, "--batch-sizes", "1", "--out", str(tmp_path / "b2.json"))
        assert r.returncode == 0, r.stderr
        ids2, gate, c = report(str(tmp_path / "b2.json"))
        assert gate.returncode == 0 and "PASS" in gate.stdout
        assert len(gh.check_runs) == 1
        (again,) = gh.check_runs.values()
        assert again["id"] == check["id"] and again["conclusion"] == "success"
        assert f"updated check run {check['id']} (success)" in c.stderr
        assert ("PATCH", f"/repos/acme/engine/check-runs/{check['id']}") in gh.requests
        (comment,) = gh.comments.values()  # the PR comment edited in place too
        assert "**PASS**" in comment["body"] and f"run(s) {ids2[0]} (commit `{sha}`)" in \
            comment["body"]
        summary = (tmp_path / "summary.md").read_text()
        assert summary.count("### ") == 4  # gate and comment, twice
        for out in (gate.stdout + gate.stderr, c.stdout + c.stderr):
            assert TOKEN not in out
        assert not any(TOKEN in b for b in gh.bodies)
    finally:
        gh.close()
