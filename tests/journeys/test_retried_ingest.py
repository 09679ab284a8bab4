"""A retried ingest keeps the same ids and deletes nothing: a CI job ingests two traced runs and
a baseline is made of them; the job is re-run and this time the server refuses one of the trace
files; nothing of what was stored is gone, and the next re-run ends with the same ids."""
from __future__ import annotations

import json
import shutil

import httpx

from tests.conftest import DATA

from .shell import PERFWARDEN, run

RUN = {"benchmark": "rerun", "hardware": {"gpu": "cpu", "gpu_count": 1},
       "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                             "samples": [100.0, 101.0, 99.0]}}}


def test_a_retried_ingest_keeps_the_same_ids_and_deletes_nothing(served, tmp_path):
    folder = tmp_path / "artifact"
    (folder / "traces").mkdir(parents=True)
    good = (DATA / "nsys_two_streams.sqlite").read_bytes()
    (folder / "traces" / "nsys_M1.sqlite").write_bytes(good)
    shutil.copyfile(DATA / "kineto_1layer_M4.json.gz", folder / "traces" / "rank0.json.gz")
    records = [{**RUN, "config": {"batch_size": 1}, "started_at": "2026-11-30T10:00:00Z",
                "trace_files": ["traces/nsys_M1.sqlite"]},
               {**RUN, "config": {"batch_size": 4}, "started_at": "2026-11-30T10:05:00Z",
                "trace_files": ["traces/rank0.json.gz"]}]
    (folder / "runs.json").write_text(json.dumps(records))

    def ingest():
        return run([PERFWARDEN, "ingest", "artifact/runs.json", "--server", served.url],
                   cwd=tmp_path)

    r = ingest()
    assert r.returncode == 0, r.stderr
    ids = list(map(int, r.stdout.split()))
    assert len(ids) == 2
    r = httpx.post(f"{served.url}/api/v1/baselines",
                   json={"name": "v1", "benchmark": "rerun", "run_ids": ids})
    assert r.status_code == 201, r.text
    traces = {i: served.get(f"/api/v1/runs/{i}")["traces"] for i in ids}

    # the re-run: the nsys export is damaged now (its header is right, the server cannot open it)
    (folder / "traces" / "nsys_M1.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    r = ingest()
    err = r.stderr.strip().splitlines()
    assert r.returncode == 65 and r.stdout == "", r.stderr  # the server refused it: bad input
    assert err[-1].startswith("error: trace nsys_M1.sqlite: server refused the trace (422)")
    assert "nothing posted" in err[-1]
    assert sorted(x["id"] for x in served.runs(benchmark="rerun")) == sorted(ids)
    for i in ids:
        assert [t["id"] for t in served.get(f"/api/v1/runs/{i}")["traces"]] == \
            [t["id"] for t in traces[i]]
    assert served.get("/api/v1/baselines/rerun/v1")["run_ids"] == ids

    (folder / "traces" / "nsys_M1.sqlite").write_bytes(good)
    r = ingest()
    assert r.returncode == 0, r.stderr
    assert list(map(int, r.stdout.split())) == ids
    for i in ids:
        assert [t["id"] for t in served.get(f"/api/v1/runs/{i}")["traces"]] == \
            [t["id"] for t in traces[i]]
    assert served.get("/api/v1/baselines/rerun/v1")["run_ids"] == ids
