"""`ingest --wait`: returns once the uploaded traces are analyzed (or one failed, exit 2 with its
error); until then the gate and the PR comment say the profiler evidence is pending. A server
whose durable jobs run only when the test drains them, so "pending" lasts as long as needed."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import DATA, ROOT, drain_jobs, serve_live

# PostgreSQL copies find nothing more here: `ingest --wait` polls the API; the trace jobs it waits
# for run on both databases' queues in tests/service/test_jobs.py and
# tests/journeys/test_trace_upload.py.
pytestmark = pytest.mark.one_database

PW = [sys.executable, "-m", "service.cli"]
RECORD = {"benchmark": "waited", "config": {"tp": 1, "batch_size": 4},
          "hardware": {"gpu": "cpu", "gpu_count": 1}, "started_at": "2026-11-30T10:00:00Z",
          "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                "samples": [100.0, 101.0, 99.0]}}}


def run(*args, cwd=ROOT):
    return subprocess.run(PW + list(args), capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=300)


@pytest.fixture
def held_server(settings):
    """The app under uvicorn with no worker of its own: traces stay pending until drained."""
    yield from serve_live(settings, jobs_in_process=False)


def record_with(folder, data: bytes, label: str, shift: float = 0.0):
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "rank0.json.gz").write_bytes(data)
    tok_s = {**RECORD["metrics"]["tok_s"], "samples": [x - shift for x in (100.0, 101.0, 99.0)]}
    (folder / "run.json").write_text(json.dumps([{**RECORD, "label": label, "metrics": {
        "tok_s": tok_s}, "trace_files": ["traces/rank0.json.gz"]}]))
    return folder / "run.json"


def test_wait_returns_once_traces_are_analyzed(held_server, tmp_path):
    url, app = held_server
    base = run("ingest", str(record_with(tmp_path / "base", (DATA / "kineto_1layer_M4.json.gz")
                                         .read_bytes(), "base")), "--server", url, "--wait", "1")
    assert base.returncode == 0, base.stderr
    assert "profiler evidence pending" in base.stderr  # no worker yet: the deadline passed
    (bid,) = base.stdout.split()
    cand_rec = record_with(tmp_path / "cand", (DATA / "kineto_1layer_M8.json.gz").read_bytes(),
                           "cand", shift=10)
    r = run("ingest", str(cand_rec), "--server", url)
    assert r.returncode == 0, r.stderr
    (cid,) = r.stdout.split()
    r = run("baseline", "set", "main", "--benchmark", "waited", "--server", url, "--run", bid)
    assert r.returncode == 0, r.stderr
    gate = ["gate", "--server", url, "--benchmark", "waited", "--baseline", "main", "--run", cid]
    r = run(*gate)
    assert f"profiler evidence pending: 1 trace(s) of run(s) {cid} not analyzed yet" in r.stdout
    r = run("comment", "--server", url, "--benchmark", "waited", "--baseline", "main", "--run",
            cid, "--repo", "acme/engine", "--pr", "1", "--dry-run")
    assert r.returncode == 0 and "**Profiler evidence pending: 1 trace(s)" in r.stdout
    drain_jobs(app)
    t0 = time.monotonic()
    r = run("ingest", str(cand_rec), "--server", url, "--wait")  # a retry: same id, analyzed
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [cid] and f"analyzed 1 trace(s) of 1 run: {cid}" in r.stderr
    assert time.monotonic() - t0 < 60
    r = run(*gate)
    assert "pending" not in r.stdout
    r = run("comment", "--server", url, "--benchmark", "waited", "--baseline", "main", "--run",
            cid, "--repo", "acme/engine", "--pr", "1", "--dry-run")
    assert "pending" not in r.stdout.lower()


def test_wait_exits_2_with_the_reason_when_an_analysis_fails(held_server, tmp_path):
    url, app = held_server
    bad = record_with(tmp_path / "bad", gzip.compress(json.dumps({"traceEvents": "none"}).encode()),
                      "bad", shift=20)
    r = run("ingest", str(bad), "--server", url)
    assert r.returncode == 0, r.stderr
    drain_jobs(app)
    r = run("ingest", str(bad), "--server", url, "--wait", "30")
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith(f"error: trace rank0.json.gz of run {r.stdout.split()[0]} failed its "
                          "analysis: ") and len(err) > 60


def test_wait_needs_a_server(tmp_path):
    r = run("ingest", str(DATA / "engines" / "serve.json"), "--wait", "5", "--out", "-")
    assert r.returncode == 64 and "--wait needs --server" in r.stderr
