"""A user with a large Kineto trace (over the size at which it is read a piece at a time, in
forked processes on the command line and inline in the server): `perfwarden analyze` prints
the figures the one-call decode gives, and the same trace ingested beside its run is analyzed
by the server into the same figures on the run."""
from __future__ import annotations

import gzip
import json
import time

from collectors.traces import kineto_split
from collectors.traces.pipeline import analyze_files
from tests.conftest import DATA

from .shell import PERFWARDEN, run

FIGURES = ("steps", "ops", "aux_gap_count", "aux_gap_mean_us", "aux_gap_median_us",
           "aux_gap_p95_us", "aux_idle_per_step_us", "step_gpu_time_us_median")


def build(path, min_bytes: int) -> None:
    """The real M=8 capture repeated, shifted in time, with fresh correlation ids and step
    names, until the file is at least `min_bytes`."""
    doc = json.loads(gzip.decompress((DATA / "kineto_1layer_M8.json.gz").read_bytes()))
    events = doc.pop("traceEvents")
    body = [e for e in events if e.get("ph") != "M"]
    ts = [e["ts"] for e in body if isinstance(e.get("ts"), (int, float))]
    span = max(ts) - min(ts) + 1000.0
    corr = max((e.get("args") or {}).get("correlation", 0) or 0 for e in body) + 1
    with open(path, "w") as f:
        f.write(json.dumps(doc)[:-1] + ', "traceEvents": [')
        f.write(",\n".join(json.dumps(e) for e in events if e.get("ph") == "M"))
        k = 0
        while f.tell() < min_bytes:
            for e in body:
                e2 = dict(e, ts=round(e["ts"] + k * span, 3)) if "ts" in e else dict(e)
                a = e.get("args")
                if isinstance(a, dict) and "correlation" in a:
                    e2["args"] = dict(a, correlation=a["correlation"] + k * corr)
                if e.get("ph") in ("s", "f") and "id" in e:
                    e2["id"] = e["id"] + k * corr
                if e.get("cat") in ("user_annotation", "gpu_user_annotation"):
                    e2["name"] = f"{e['name']}_{k}"
                f.write(",\n" + json.dumps(e2))
            k += 1
        f.write("]}\n")


def test_a_large_trace_gives_the_same_figures_on_the_command_line_and_on_the_run(
        served_shared, tmp_path, monkeypatch):
    served = served_shared
    (tmp_path / "traces").mkdir()
    trace = tmp_path / "traces" / "rank0.json"
    build(trace, kineto_split.SPLIT_MIN_BYTES + (1 << 20))
    r = run([PERFWARDEN, "analyze", str(trace), "--json"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    parsing = [ln for ln in r.stderr.splitlines() if ln.startswith("parsing")]
    assert len(parsing) == 1 and "a piece at a time in" in parsing[0], r.stderr  # no fallback
    cli = json.loads(r.stdout)
    monkeypatch.setattr(kineto_split, "SPLIT_MIN_BYTES", 1 << 40)  # the one-call decode
    whole = analyze_files([trace])
    assert cli["steps"] > 200 and cli["aux_gap_count"] > 0
    assert {k: cli[k] for k in FIGURES} == {k: whole[k] for k in FIGURES}

    record = {"benchmark": "large-trace", "config": {"tp": 1, "batch_size": 8},
              "hardware": {"gpu": "H200", "gpu_count": 1}, "started_at": "2026-12-01T10:00:00Z",
              "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                    "samples": [87.7, 87.6, 87.8]}},
              "trace_files": ["traces/rank0.json"]}
    (tmp_path / "run.json").write_text(json.dumps([record]))
    r = run([PERFWARDEN, "ingest", "run.json", "--server", served.url], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (rid,) = map(int, r.stdout.split())
    for _ in range(1200):
        stored = served.get(f"/api/v1/runs/{rid}")
        if stored["traces"][0]["state"] != "pending":
            break
        time.sleep(0.1)
    assert stored["traces"][0]["state"] == "done", stored["traces"]
    assert {k: stored["trace_summary"][k] for k in FIGURES} == {k: cli[k] for k in FIGURES}
