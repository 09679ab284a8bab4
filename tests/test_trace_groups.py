"""Several `--trace` files given to one ingest: the rank files of one capture are one set (the
run's own trace, whose summary is the run's), an SGLang prefill trace of the same rank is
another trace of the run, summarized on its own; a record file naming its groups goes through
`--out` and a later ingest unchanged."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.conftest import DATA, ROOT

PW = [sys.executable, "-m", "service.cli"]
RECORD = {"benchmark": "grouped", "config": {"tp": 2, "batch_size": 4},
          "hardware": {"gpu": "cpu", "gpu_count": 2}, "started_at": "2026-11-30T10:00:00Z",
          "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                "samples": [100.0, 101.0, 99.0]}}}
FILES = {"1764583200.1-TP-0-decode.trace.json.gz": "kineto_1layer_M4.json.gz",
         "1764583200.1-TP-1-decode.trace.json.gz": "kineto_1layer_M4_epoch_us.json.gz",
         "1764583200.1-TP-0-prefill.trace.json.gz": "kineto_1layer_M8.json.gz"}


def run(*args, cwd=ROOT):
    return subprocess.run(PW + list(args), capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ), timeout=600)


def _traces(tmp_path, folder="profile"):
    d = tmp_path / folder
    d.mkdir()
    for name, src in FILES.items():
        shutil.copy(DATA / src, d / name)
    return [str(d / n) for n in FILES]


def test_a_decode_set_and_a_prefill_trace_are_two_traces_of_the_run(live_server, tmp_path):
    url, _ = live_server
    rec = tmp_path / "run.json"
    rec.write_text(json.dumps([RECORD]))
    r = run("ingest", str(rec), "--no-detect", "--trace", *_traces(tmp_path), "--server", url,
            "--wait", "300")
    assert r.returncode == 0, r.stderr
    assert "2 trace sets: 3 file(s)" in r.stderr
    (rid,) = r.stdout.split()
    got = json.loads(subprocess.run(["curl", "-s", f"{url}/api/v1/runs/{rid}"],
                                    capture_output=True, text=True).stdout)
    by_name = {t["filename"]: t for t in got["traces"]}
    assert {t["state"] for t in got["traces"]} == {"done"}
    decode = [by_name[n] for n in list(FILES)[:2]]
    prefill = by_name[list(FILES)[2]]
    assert [t["trace_group"] for t in decode] == [0, 0] and prefill["trace_group"] == 1
    assert prefill["phase"] == "prefill" and {t["phase"] for t in decode} == {"decode"}
    # the run's summary is the decode set's, both ranks; the prefill trace has its own
    assert len(got["trace_summary"]["ranks"]) == 2
    assert prefill["group_summary"]["source"] and len(prefill["group_summary"]["ranks"]) <= 1
    assert all(t["group_summary"] is None for t in decode)

    # the same through a record file: --out keeps the groups, a later ingest posts them
    out = tmp_path / "kept" / "runs.json"
    assert run("ingest", str(rec), "--no-detect", "--trace", *_traces(tmp_path, "again"),
               "--out", str(out)).returncode == 0
    kept = json.loads(out.read_text())[0]
    assert kept["trace_groups"] == [{"phase": "decode", "files": 2},
                                    {"phase": "prefill", "files": 1}]
    r = run("ingest", str(out), "--no-detect", "--server", url)
    assert r.returncode == 0 and r.stdout.split() == [rid], r.stderr  # the same run, stored once
