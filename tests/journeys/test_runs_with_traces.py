"""Runs and their traces land together: a broken trace stores nothing (a trace whose analysis
fails after its 202 says `failed` beside its run), and a folder collected
with a relative --workdir ingests from wherever it was moved."""
from __future__ import annotations

import gzip
import json
import shutil
import time

import httpx

from tests.conftest import DATA

from .shell import PERFWARDEN, run

RECORD = {"benchmark": "traced", "config": {"tp": 1, "batch_size": 4},
          "hardware": {"gpu": "cpu", "gpu_count": 1}, "started_at": "2026-11-30T10:00:00Z",
          "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                "samples": [100.0, 101.0, 99.0]}}}


def record_with(folder, name: str, data: bytes):
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / name).write_bytes(data)
    (folder / "run.json").write_text(json.dumps([{**RECORD,
                                                  "trace_files": [f"traces/{name}"]}]))
    return folder / "run.json"


def test_a_broken_trace_stores_nothing(served_shared, tmp_path):
    served = served_shared
    good = (DATA / "kineto_1layer_M4.json.gz").read_bytes()
    cases = {
        "truncated": ("rank0.json.gz", good[: len(good) // 2]),  # refused before posting
        "not-a-trace": ("rank0.json", b"PK\x03\x04 a zip file"),
    }
    for case, (name, data) in cases.items():
        rec = record_with(tmp_path / case, name, data)
        r = run([PERFWARDEN, "ingest", str(rec), "--server", served.url], cwd=tmp_path)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2 and err[-1].startswith("error: trace file"), (case, r.stderr)
        assert "nothing" in err[-1] and r.stdout == "", (case, r.stdout)
        assert served.runs(benchmark="traced") == [], case
    (tmp_path / "missing" / "traces").mkdir(parents=True)
    rec = tmp_path / "missing" / "run.json"
    rec.write_text(json.dumps([{**RECORD, "trace_files": ["traces/gone.json.gz"]}]))
    r = run([PERFWARDEN, "ingest", str(rec), "--server", served.url], cwd=tmp_path)
    assert r.returncode == 2 and "not found" in r.stderr and served.runs(benchmark="traced") == []
    # a well-formed file whose analysis fails: the upload is accepted (202, the analysis is a
    # durable job), and the trace then says `failed` with the reason, beside its run
    rec = record_with(tmp_path / "refused", "rank0.json.gz",
                      gzip.compress(json.dumps({"traceEvents": "none"}).encode()))
    r = run([PERFWARDEN, "ingest", str(rec), "--server", served.url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (rid,) = map(int, r.stdout.split())
    for _ in range(600):
        (trace,) = served.get(f"/api/v1/runs/{rid}")["traces"]
        if trace["state"] != "pending":
            break
        time.sleep(0.1)
    assert trace["state"] == "failed" and trace["error"], trace
    assert httpx.delete(f"{served.url}/api/v1/runs/{rid}").status_code == 200
    # the same record with its real trace lands with it
    rec = record_with(tmp_path / "good", "rank0.json.gz", good)
    r = run([PERFWARDEN, "ingest", str(rec), "--server", served.url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (stored,) = served.runs(benchmark="traced")
    assert [t["filename"] for t in served.get(f"/api/v1/runs/{stored['id']}")["traces"]] == [
        "rank0.json.gz"]


def test_a_relative_workdir_ingests_after_the_folder_moves(served_shared, tmp_path):
    served = served_shared
    (tmp_path / "node").mkdir()
    r = run([PERFWARDEN, "collect", "decode", "--device", "cpu", "--trials", "2", "--steps", "8",
             "--warmup", "1", "--threads", "1", "--profile", "torch", "--profile-steps", "2",
             "--benchmark", "moved", "--quiet", "--workdir", "w", "--out", "w/run.json"],
            cwd=tmp_path / "node")
    assert r.returncode == 0, r.stderr
    shutil.move(tmp_path / "node" / "w", tmp_path / "copied")  # as a CI artifact would be
    (tmp_path / "elsewhere").mkdir()
    r = run([PERFWARDEN, "ingest", "../copied/run.json", "--server", served.url],
            cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stderr
    (rid,) = map(int, r.stdout.split())
    stored = served.get(f"/api/v1/runs/{rid}")
    assert [t["filename"] for t in stored["traces"]] == ["trace_M1_rank0.json.gz"]
    assert stored["trace_summary"] is not None
