"""Hostile values in traces and in stored rows, on SQLite and PostgreSQL: a trace claiming
durations no profile holds fails with its reason; a kernel name of megabytes is stored cut, with
a marker; a stored trace summary that is malformed never makes a page or the gate fail: what
is valid is shown, and what is not is named."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.traces.analysis import NAME_KEPT
from tests.conftest import DATA, LOCAL, drain_jobs, minimal_run

KINETO = DATA / "kineto_1layer_M8.json.gz"


def _app(settings):
    from service.main import create_app

    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    return app, TestClient(app, **LOCAL)


def _kineto_with(tmp_path: Path, change) -> Path:
    doc = json.loads(gzip.decompress(KINETO.read_bytes()))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    change(kernels)
    out = tmp_path / "rank0.json.gz"
    out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return out


def _analyzed(app, c, path: Path) -> tuple[int, dict]:
    rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
    r = c.post(f"/api/v1/runs/{rid}/traces?filename=rank0.json.gz", content=path.read_bytes())
    assert r.status_code == 202, r.text
    drain_jobs(app)
    return rid, c.get(f"/api/v1/runs/{rid}").json()


def test_a_trace_claiming_implausible_durations_fails_with_its_reason(settings, tmp_path):
    app, c = _app(settings)

    def forever(kernels):
        kernels[3]["dur"] = 1e15  # microseconds: 1e18 ns, some 31 years

    _, run = _analyzed(app, c, _kineto_with(tmp_path, forever))
    (t,) = run["traces"]
    assert t["state"] == "failed", t
    assert "rank0.json.gz" in t["error"] and "a kernel lasts 1e+09 s" in t["error"], t["error"]
    assert run["trace_summary"] is None


def test_a_kernel_name_of_megabytes_is_stored_cut_with_a_marker(settings, tmp_path):
    app, c = _app(settings)
    long = "k" * (2 << 20)

    def rename(kernels):
        first = kernels[0]["name"]
        for k in kernels:
            if k["name"] == first:
                k["name"] = long

    rid, run = _analyzed(app, c, _kineto_with(tmp_path, rename))
    assert run["traces"][0]["state"] == "done", run["traces"]
    names = [k["name"] for k in run["trace_summary"]["kernels"]]
    cut = [n for n in names if n.startswith("kkk")]
    assert cut and all(n == "k" * NAME_KEPT + f"… [cut: {len(long):,} characters]" for n in cut)
    assert len(c.get(f"/api/v1/runs/{rid}").content) < 200_000
    assert c.get(f"/runs/{rid}").status_code == 200


MALFORMED = [
    [1, 2],
    "a string",
    {"steps": "many", "kernels": 5, "warnings": "not a list"},
    {"steps": 10, "kernels": [None, "k", {"name": 3, "total_us": "a"},
                              {"name": "good_kernel", "count": 4, "total_us": 8.0, "mean_us": 2.0}],
     "ranks": "r", "ordering": {"verdict": ["odd"], "pairs": "x"}, "aux_gap_count": {"a": 1},
     "streams": [{"device": "x"}]},
]


@pytest.mark.parametrize("stored", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_stored_summary_never_fails_a_page(settings, stored):
    from sqlalchemy import create_engine, text

    app, c = _app(settings)
    kineto = KINETO.read_bytes()
    ids = []
    for k in range(2):
        rid = c.post("/api/v1/runs", json=minimal_run(started_at=f"2026-01-0{k + 1}T00:00:00Z",
                                                      label="base" if k == 0 else "pr")).json()["id"]
        c.post(f"/api/v1/runs/{rid}/traces?filename=rank0.json.gz", content=kineto)
        ids.append(rid)
    drain_jobs(app)
    eng = create_engine(settings.database_url)
    try:
        with eng.begin() as con:
            con.execute(text("UPDATE runs SET trace_summary = :s"), {"s": json.dumps(stored)})
    finally:
        eng.dispose()
    page = c.get(f"/runs/{ids[1]}")
    assert page.status_code == 200
    if isinstance(stored, dict):
        assert "not shown" in page.text
    if isinstance(stored, dict) and isinstance(stored["kernels"], list):
        assert "good_kernel" in page.text  # the valid row is shown
    assert c.get(f"/api/v1/runs/{ids[1]}").status_code == 200
    assert c.get("/benchmarks/bench-a").status_code == 200
    compare = c.get("/compare", params={"benchmark": "bench-a", "baseline": "label:base",
                                        "run_ids": str(ids[1])})
    assert compare.status_code == 200
    r = c.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "label:base",
                                     "run_ids": [ids[1]]})
    assert r.status_code == 200, r.text
