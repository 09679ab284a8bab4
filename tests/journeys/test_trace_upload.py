"""Journey: a run from the H200 arrives without its trace summary; its real nsys
trace (TP2, two GPUs) is uploaded and answered 202 `pending` at once; the run page says
pending; `perfwarden worker --drain` (the real command) analyzes it; the run page and the API
then show it `done` with the summary the collector computed from the same file on the GPU node."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import H200, LOCAL, ROOT

TRACE = H200 / "traces" / "tp2-overlap-eager-nsys_M1.sqlite.gz"


def _record() -> dict:
    rec = next(r for r in json.loads((H200 / "runs" / "tp2-overlap-eager.json").read_text())
               if r.get("trace_files"))
    assert rec["trace_files"] == [str(TRACE.relative_to(ROOT))]
    return rec


def _upload(c, rec: dict):
    """The run, then its trace: (run id, the upload's answer, 202)."""
    rid = c.post("/api/v1/runs", json=rec).json()["id"]
    r = c.post(f"/api/v1/runs/{rid}/traces", params={"filename": TRACE.name},
               content=TRACE.read_bytes())
    assert r.status_code == 202
    return rid, r


def test_upload_is_pending_then_the_worker_makes_it_done(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    rec = _record()
    expected = rec.pop("trace_summary")  # what the GPU node's analysis said about this file
    rec.pop("trace_files")
    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
        rid, r = _upload(c, rec)
        assert r.json()["state"] == "pending" and r.json()["format"] == "nsys"
        page = c.get(f"/runs/{rid}").text
        assert 'data-state="pending"' in page and 'id="summary"' not in page
        assert c.get(f"/api/v1/runs/{rid}").json()["traces"][0]["state"] == "pending"

        env = {k: v for k, v in os.environ.items() if not k.startswith("PERFWARDEN_")}
        env.update(PERFWARDEN_DATABASE_URL=settings.database_url,
                   PERFWARDEN_DATA_DIR=str(settings.data_dir))
        done = subprocess.run([sys.executable, "-m", "service.cli", "worker", "--drain"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr

        run = c.get(f"/api/v1/runs/{rid}").json()
        assert run["traces"][0]["state"] == "done" and run["traces"][0]["error"] is None
        got = run["trace_summary"]
        assert got["steps"] == expected["steps"] == 20
        assert got["aux_gap_count"] == expected["aux_gap_count"] == 140
        assert got["aux_gap_mean_us"] == pytest.approx(expected["aux_gap_mean_us"], rel=1e-6)
        page = c.get(f"/runs/{rid}").text
        assert 'data-state="done"' in page and 'id="summary"' in page
        row = re.search(r'<table id="summary">.*?</tr>\s*<tr><td>(\d+)[^<]*</td><td class="num">(\d+)</td>',
                        page, re.S)
        assert row and row.groups() == ("20", "140")
    app.state.engine.dispose()


def test_an_uploaded_profile_that_cannot_show_the_timed_trials_says_so(settings):
    """The warnings of spec/metrics.md, Representativeness warnings are the same whether the
    collector attached the trace
    or it was uploaded: the run says CUDA graphs, its profile ran eagerly."""
    from fastapi.testclient import TestClient

    from collectors.traces import analyze_files
    from collectors.traces.representative import warnings_for
    from service.main import create_app
    from tests.conftest import drain_jobs

    rec = _record()
    rec.pop("trace_summary"), rec.pop("trace_files")
    rec["config"] = {**rec["config"], "cuda_graphs": True}
    want = warnings_for(analyze_files([TRACE]), rec["config"])
    assert len(want) == 1 and "no graph replays" in want[0]
    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
        rid, _ = _upload(c, rec)
        drain_jobs(app)
        got = c.get(f"/api/v1/runs/{rid}").json()["trace_summary"]
        assert got["warnings"] == want
        page = c.get(f"/runs/{rid}").text
        assert 'id="trace-warnings"' in page and "this profile ran eagerly" in page
    app.state.engine.dispose()


@pytest.mark.one_database  # the rank set's rows on both databases: tests/service/test_rank_race.py
def test_a_rank_set_arrives_rank_by_rank_and_is_summarized_as_one(settings):
    """Journey (TP2 Kineto, real H200 ranks): rank 0 is uploaded and analyzed by `perfwarden
    worker --drain` while rank 1 is still to come (the run has no set summary yet, rank 0's
    columns are kept); rank 1 arrives and is drained; the run's summary is the set's, the one
    `perfwarden analyze` gives on the two files, and nothing is left kept."""
    from fastapi.testclient import TestClient

    from service.main import create_app
    from service.traces import storage

    ranks = sorted((H200 / "resident" / "torch" / "traces").glob("*.json.gz"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFWARDEN_")}
    env.update(PERFWARDEN_DATABASE_URL=settings.database_url,
               PERFWARDEN_DATA_DIR=str(settings.data_dir))

    def drain() -> None:
        done = subprocess.run([sys.executable, "-m", "service.cli", "worker", "--drain"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    local = subprocess.run([sys.executable, "-m", "service.cli", "analyze", "--json", "--quiet",
                            "--guard-preset", "moe-routed", *map(str, ranks)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=300)
    assert local.returncode == 0, local.stderr
    expected = json.loads(local.stdout)
    kept = storage.columns_dir(settings.data_dir)
    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
        rid = c.post("/api/v1/runs", json=_record() | {"trace_summary": None,
                                                        "trace_files": []}).json()["id"]
        for i, f in enumerate(ranks):
            r = c.post(f"/api/v1/runs/{rid}/traces", params={"filename": f.name, "set_size": 2},
                       content=f.read_bytes())
            assert r.status_code == 202 and r.json()["state"] == "pending"
            drain()
            run = c.get(f"/api/v1/runs/{rid}").json()
            assert [t["state"] for t in run["traces"]] == ["done"] * (i + 1)
            if i == 0:
                assert run["trace_summary"] is None  # the set is not complete
                assert len(list(kept.glob("*.npz"))) == 1
        got = run["trace_summary"]
        assert [r["rank"] for r in got["ranks"]] == [0, 1]
        for key in ("steps", "aux_gap_count", "aux_gap_median_us", "aux_gap_p95_us",
                    "step_gpu_time_us_median", "ranks"):
            assert got[key] == expected[key], key
        assert got["steps"] > 0
        page = c.get(f"/runs/{rid}").text
        assert page.count('data-state="done"') == 2 and 'id="summary"' in page
    app.state.engine.dispose()
    assert not list(kept.glob("*"))
