"""From a factorial matrix to its decision, as a user meets it: `collect decode` makes the
matrix on the CPU (batch sizes x shared-expert order, every cell without and with deterministic
mode, a PyTorch-profiler trace of every cell), `ingest` stores it with its traces, `explain`
reports on it, the matrix page (headless Chromium) shows the same decision, and the PR comment
(a local GitHub stand-in) carries it too."""
from __future__ import annotations

import html
import json
import os
import subprocess
import time

import pytest

from tests.github_standin import TOKEN, FakeGitHub

from .shell import PERFWARDEN, env

CHROMIUM = "/usr/bin/chromium"
BENCH = "journey-matrix"
CPU = ["collect", "decode", "--device", "cpu", "--trials", "3", "--steps", "4", "--warmup", "1",
       "--threads", "1", "--benchmark", BENCH, "--quiet"]


def pw(*args, **extra):
    r = subprocess.run([PERFWARDEN, *args], capture_output=True, text=True, timeout=600,
                       env=env(**extra))
    assert r.returncode == 0, f"{args[:2]}: {r.stderr}"
    return r


def _page_decision(url: str, deadline_s: float = 120) -> tuple[str, str]:
    """The matrix page's decision sentence and whole text, once the job has stored it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = b.new_page()
            end = time.monotonic() + deadline_s
            while True:
                assert page.goto(url).status == 200
                if page.locator("#decision").count():
                    return page.locator("#decision").inner_text(), page.inner_text("body")
                assert time.monotonic() < end, "the matrix page never showed a decision"
                time.sleep(1)
        finally:
            b.close()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium not installed")
def test_matrix_to_explain_to_page_to_pr_comment(served, tmp_path):
    # the matrix: 2 batch sizes x 2 orders, each without and with deterministic mode, profiled
    out = tmp_path / "matrix.json"
    pw(*CPU, "--batch-sizes", "1,2", "--shared-experts", "overlap,serial", "--deterministic",
       "both", "--profile", "torch", "--profile-steps", "2", "--workdir", str(tmp_path / "w"),
       "--out", str(out))
    recs = json.loads(out.read_text())
    assert len(recs) == 8 and sum(bool(r["config"].get("deterministic")) for r in recs) == 4
    assert all(r["trace_files"] for r in recs)  # every cell profiled
    ids = pw("ingest", str(out), "--branch", "main", "--server", served.url, "--wait",
             "300").stdout.split()
    assert len(ids) == 8

    ex = json.loads(pw("explain", BENCH, "--server", served.url, "--json").stdout)
    assert ex["runs"] == 4 and {f["key"] for f in ex["factors"]} == {"batch_size",
                                                                      "shared_experts"}
    det = ex["deterministic"]
    assert det["runs"] == 4 and det["command"] is None
    # the CPU decode is deterministic in every cell: the report says so, from the digests
    identical = sum(r["determinism"]["identical"] == r["determinism"]["repeats"] for r in recs
                    if r["config"].get("deterministic"))
    assert det["identical_runs"] == identical
    text = pw("explain", BENCH, "--server", served.url).stdout
    assert f"decision: {ex['decision']}" in text

    shown, body = _page_decision(f"{served.url}/benchmarks/{BENCH}/matrix")
    assert shown == ex["decision"]
    assert f"perfwarden explain {BENCH}" in body

    # a pull request's run of one cell, judged against the matrix's cell, and its comment
    pw("baseline", "set", "main", "--benchmark", BENCH, "--server", served.url, "--run", ids[0])
    pr_out = tmp_path / "pr.json"
    pw(*CPU, "--batch-sizes", "1", "--out", str(pr_out))
    (pr_id,) = pw("ingest", str(pr_out), "--branch", "fix/x", "--pr", "7", "--repository",
                  "acme/engine", "--server", served.url).stdout.split()
    gh = FakeGitHub()
    try:
        pw("comment", "--server", served.url, "--benchmark", BENCH, "--baseline", "main",
           "--run", pr_id, "--repo", "acme/engine", "--pr", "7", "--dashboard-url", served.url,
           GITHUB_TOKEN=TOKEN, GITHUB_API_URL=gh.url)
        (comment,) = gh.comments.values()
    finally:
        gh.close()
    md = html.unescape(comment["body"])
    assert f"What explains the `{BENCH}` matrix" in md
    assert ex["decision"] in md
    assert f"{served.url}/benchmarks/{BENCH}/matrix" in md
    # the PR's run is not part of the history the report explains
    again = json.loads(pw("explain", BENCH, "--server", served.url, "--json").stdout)
    assert again["runs"] == 4 and again["decision"] == ex["decision"]


def test_throughput_matrix_names_the_switched_level_and_the_interaction(served, tmp_path):
    """A user's throughput matrix on the committed H200 curve (grows with M), one with a 3%
    kernel switch planted at M=8 and one where the shared-expert order helps at M=7/8 and hurts
    at M=1/4: `explain --metric tok_s` compares M=8 with the others, and names the interaction."""
    from tests.service.planted_matrix import throughput

    switched = tmp_path / "switched.json"
    switched.write_text(json.dumps(throughput(lambda M, o: 0.97 if M == 8 else 1.0,
                                              "journey-switch", seed=11)))
    pw("ingest", str(switched), "--branch", "main", "--server", served.url)
    ex = json.loads(pw("explain", "journey-switch", "--metric", "tok_s", "--server", served.url,
                       "--json").stdout)
    assert ex["key"] == "batch_size" and ex["diff"]["outlier_levels"] == ["8"]
    text = pw("explain", "journey-switch", "--metric", "tok_s", "--server", served.url).stdout
    assert "outlier level(s) 8, others 1/4/7" in text

    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(throughput(
        lambda M, o: (1.03 if M >= 7 else 0.97) if o == "overlap" else 1.0, "journey-mix",
        seed=12)))
    pw("ingest", str(mixed), "--branch", "main", "--server", served.url)
    text = pw("explain", "journey-mix", "--metric", "tok_s", "--server", served.url).stdout
    assert "batch_size x shared_experts interact" in text
    assert "shared_experts is not the cause" not in text
