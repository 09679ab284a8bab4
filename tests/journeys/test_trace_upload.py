"""Journey (issue 24): a run from the H200 arrives without its trace summary; its real nsys
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

from tests.conftest import H200, ROOT

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
    with TestClient(app) as c:
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
    """The warnings of metrics v1.2 item 5 are the same whether the collector attached the trace
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
    with TestClient(app) as c:
        rid, _ = _upload(c, rec)
        drain_jobs(app)
        got = c.get(f"/api/v1/runs/{rid}").json()["trace_summary"]
        assert got["warnings"] == want
        page = c.get(f"/runs/{rid}").text
        assert 'id="trace-warnings"' in page and "this profile ran eagerly" in page
    app.state.engine.dispose()
