"""Curation, as a user meets it on a live server: an alert on a slower level that was meant (a
larger model shard) is marked expected from the CLI (the alert closes, the benchmark page and
the PR comment say so, the gate's history spread starts at the new level); a metric on a runner
with locked clocks is muted for a week (the gate no longer fails on it, the comment and the
compare page say why and who); withdrawing the mute brings the failure back, and the audit keeps
both with who and when."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import ROOT, minimal_run
from tests.github_standin import TOKEN, FakeGitHub

PW = [sys.executable, "-m", "service.cli"]


def pw(*args, env=None):
    return subprocess.run(PW + list(args), capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, **(env or {})})


def rec(level: float, i: int, rng: random.Random, **over) -> dict:
    lv = level * (1 + rng.gauss(0, 0.002))
    return minimal_run(benchmark="moe", started_at=f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z",
                       metrics={"tok_s": {"samples": [lv * (1 + rng.gauss(0, 0.001))
                                                      for _ in range(5)]}}, **over)


@pytest.mark.one_database  # the curations' SQL on both databases: tests/service/test_curations.py
def test_expected_change_and_mute_reach_the_gate_the_pages_and_the_pr_comment(live_server):
    url, _ = live_server
    rng = random.Random(11)
    http = httpx.Client(base_url=url, timeout=60)

    def post(recs):
        r = http.post("/api/v1/runs/batch", json={"runs": recs})
        assert r.status_code == 201, r.text
        return r.json()["ids"]

    post([rec(1000, i, rng, commit=f"{i:040x}") for i in range(12)])
    new = post([rec(900, 12 + i, rng, commit=f"{12 + i:040x}") for i in range(12)])
    deadline = time.monotonic() + 60
    while not (alerts := http.get("/api/v1/alerts?benchmark=moe&state=open").json()["alerts"]):
        assert time.monotonic() < deadline, "no alert was raised"
        time.sleep(0.3)
    (alert,) = alerts
    assert alert["run_id"] == new[0]
    sid = alert["series_id"]

    # the slower level was meant: marked expected where the alert points
    r = pw("curate", "expected", "--benchmark", "moe", "--series", str(sid), "--run",
           str(alert["run_id"]), "--note", "larger model shard: slower by design", "--server", url)
    assert r.returncode == 0, r.stderr
    assert f"closed alert(s) {alert['id']}" in r.stderr
    assert http.get("/api/v1/alerts?benchmark=moe&state=open").json()["alerts"] == []
    page = http.get("/benchmarks/moe").text
    assert "larger model shard: slower by design" in page and "expected change at run" in page

    # a PR measured on a runner with locked clocks: -5% on three runs a side
    base = post([rec(900, 40 + i, rng, branch="rel") for i in range(3)])
    cand = post([rec(855, 43 + i, rng, branch="fix", pr=7) for i in range(3)])
    runs = [x for i in cand for x in ("--run", str(i))]
    ref = "runs:" + ",".join(map(str, base))
    gate = pw("gate", "--server", url, "--benchmark", "moe", "--baseline", ref, *runs)
    assert gate.returncode == 1 and "regression" in gate.stdout, gate.stdout + gate.stderr

    r = pw("curate", "mute", "--benchmark", "moe", "--series", str(sid), "--metric", "tok_s",
           "--days", "7", "--note", "runner clocks locked at 1.1 GHz", "--server", url)
    assert r.returncode == 0, r.stderr
    mute_id = int(r.stderr.split()[1].rstrip(":"))
    gate = pw("gate", "--server", url, "--benchmark", "moe", "--baseline", ref, *runs)
    assert gate.returncode == 3, gate.stdout + gate.stderr  # inconclusive: nothing decides
    assert "(muted)" in gate.stdout and "curation: tok_s" in gate.stdout

    gh = FakeGitHub()
    try:
        c = pw("comment", "--server", url, "--benchmark", "moe", "--baseline", ref, *runs,
               "--repo", "acme/engine", "--pr", "7",
               env={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.url})
        assert c.returncode == 0, c.stderr
        (comment,) = gh.comments.values()
    finally:
        gh.close()
    body = comment["body"]
    assert "**Curation:**" in body and "(muted: does not decide)" in body
    assert "runner clocks locked at 1.1 GHz" in body and "slower by design" in body
    assert "FAIL" not in body
    assert "Noise of these series" in body and "clock mode" in body  # the series' noise card
    compare = http.get(f"/compare?benchmark=moe&baseline={ref}&run_ids={','.join(map(str, cand))}")
    assert compare.status_code == 200, compare.text
    assert "(muted)" in compare.text and "runner clocks locked" in compare.text

    # the mute withdrawn: the PR fails again; the audit keeps both curations
    r = pw("curate", "withdraw", str(mute_id), "--server", url)
    assert r.returncode == 0, r.stderr
    gate = pw("gate", "--server", url, "--benchmark", "moe", "--baseline", ref, *runs)
    assert gate.returncode == 1
    listing = pw("curate", "list", "--benchmark", "moe", "--all", "--server", url)
    lines = listing.stdout.strip().splitlines()
    assert len(lines) == 2 and any("withdrawn by local" in x for x in lines) and \
        any("in force" in x and "expected" in x for x in lines), listing.stdout
    http.close()
