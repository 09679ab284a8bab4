"""Why, not only what: runs collected with their traces are ingested, gated and commented on,
and every place that shows the verdict says its cause and the kernels behind it.

Six runs of a decode benchmark, each with its H200 Kineto trace (tests/kernel_runs.py: every
kernel jittered 1% run by run, one kernel 15% slower in the three candidates, whose tok/s drop
with it). The gate's JSON answer names that kernel alone with its interval and gives `code` as
the cause; `perfwarden gate`, the PR comment, the check run's summary and /compare show the
same cause line and the same kernel, and no kernel that only jittered."""
from __future__ import annotations

import json
import time
import urllib.request

from tests.github_standin import TOKEN, FakeGitHub
from tests.kernel_runs import SLOWED, six_traces

from .shell import PERFWARDEN, run

JITTER_ONLY = "index_elementwise_kernel"  # the largest kernel of the trace: only jittered
BENCH = "why-decode"


def _record(folder, tok_s: list[float]) -> str:
    rec = {"benchmark": BENCH, "config": {"tp": 1, "batch_size": 4},
           "hardware": {"gpu": "NVIDIA H200", "gpu_count": 1, "driver": "580.159.04"},
           "environment": {"torch": "2.11.0", "cuda": "13.0", "nccl": "2.28.9"},
           "started_at": "2026-12-01T10:00:00Z",
           "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher", "samples": tok_s}},
           "trace_files": ["traces/rank0.json.gz"]}
    (folder / "run.json").write_text(json.dumps([rec]))
    return str(folder / "run.json")


def _ingest(served, path: str, *flags: str) -> int:
    r = run([PERFWARDEN, "ingest", path, "--server", served.url, *flags])
    assert r.returncode == 0, r.stderr
    (rid,) = map(int, r.stdout.split())
    return rid


def _analyzed(served, ids: list[int]) -> None:
    deadline = time.monotonic() + 300
    for rid in ids:
        while True:
            (trace,) = served.get(f"/api/v1/runs/{rid}")["traces"]
            if trace["state"] != "pending":
                assert trace["state"] == "done", trace
                break
            assert time.monotonic() < deadline, "trace analysis did not finish"
            time.sleep(0.2)


def test_the_cause_and_the_slowed_kernel_everywhere_the_verdict_is_shown(served, tmp_path):
    base_traces, cand_traces = six_traces(tmp_path / "node")
    base = [_ingest(served, _record(p.parent.parent, [1000.0 + i, 1004.0 + i, 998.0 + i]),
                    "--branch", "main", "--commit", "a" * 40)
            for i, p in enumerate(base_traces)]
    sha = "b" * 40
    cand = [_ingest(served, _record(p.parent.parent, [930.0 + i, 934.0 + i, 928.0 + i]),
                    "--branch", "slow", "--commit", sha, "--repository", "acme/engine",
                    "--pr", "7") for i, p in enumerate(cand_traces)]
    _analyzed(served, base + cand)
    r = run([PERFWARDEN, "baseline", "set", "main", "--benchmark", BENCH, "--server", served.url,
             *[x for i in base for x in ("--run", str(i))]])
    assert r.returncode == 0, r.stderr
    ask = ["--server", served.url, "--benchmark", BENCH, "--baseline", "main",
           *[x for i in cand for x in ("--run", str(i))], "--metric", "tok_s",
           "--threshold", "tok_s=2"]

    # the gate's JSON answer: the evidence and the cause
    r = run([PERFWARDEN, "gate", *ask, "--json"])
    assert r.returncode == 1, r.stderr
    answer = json.loads(r.stdout)
    assert answer["verdict"] == "fail"
    (ev,) = answer["trace_evidence"]
    assert ev["baseline_run_ids"] == base and ev["candidate_run_ids"] == cand and not ev["note"]
    (kernel,) = ev["kernels"]
    assert kernel["name"] == SLOWED and kernel["significant"] and kernel["material"]
    assert 0 < kernel["ci_low_us"] < kernel["delta_us"] < kernel["ci_high_us"]
    assert ev["tested_kernels"] >= 4
    cause = answer["cause"]
    assert cause["kind"] == "code" and cause["line"].startswith("code: ")
    assert SLOWED in cause["line"] and JITTER_ONLY not in cause["line"]
    interval = f"CI {kernel['ci_low_us']:+.1f} to {kernel['ci_high_us']:+.1f}"
    assert interval in cause["line"]

    # the text answer
    r = run([PERFWARDEN, "gate", *ask])
    assert r.returncode == 1 and f"cause: {cause['line']}" in r.stdout, r.stdout
    assert "kernels changed significantly: " + SLOWED in r.stdout

    # the PR comment and the check run
    gh = FakeGitHub()
    try:
        r = run([PERFWARDEN, "comment", *ask, "--repo", "acme/engine", "--pr", "7", "--check",
                 "--dashboard-url", served.url], GITHUB_TOKEN=TOKEN, GITHUB_API_URL=gh.url)
        assert r.returncode == 0, r.stderr
        (comment,) = gh.comments.values()
        (check,) = gh.check_runs.values()
    finally:
        gh.close()
    for text in (comment["body"], check["output"]["summary"]):
        assert "**Cause:** code: " in text and interval in text
        assert f"`{SLOWED}`" in text and JITTER_ONLY not in text
        assert "Kernels that changed significantly and materially" in text
    assert check["conclusion"] == "failure"

    # /compare
    q = f"benchmark={BENCH}&baseline=main&run_ids={','.join(map(str, cand))}&metrics=tok_s" \
        "&thresholds=tok_s=2"
    with urllib.request.urlopen(f"{served.url}/compare?{q}", timeout=60) as resp:
        page = resp.read().decode()
    assert 'id="cause"' in page and "Cause:</b> code: " in page
    evidence_rows = [line for line in page.splitlines() if 'class="evidence"' in line]
    assert evidence_rows and all(SLOWED in row and JITTER_ONLY not in row
                                 for row in evidence_rows)
