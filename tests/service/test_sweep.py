"""The start-up sweep (issue #24): a trace left `pending` whose analysis job was lost (the queue
wiped, the database restored from a backup) is analyzed once a worker starts."""
from __future__ import annotations

from sqlalchemy import create_engine, text

from tests.conftest import H200, drain_jobs, minimal_run


def _wipe_queue(url: str) -> None:
    eng = create_engine(url)
    try:
        with eng.begin() as c:
            if url.startswith("sqlite"):
                c.execute(text("DELETE FROM jobs"))
            else:
                c.execute(text("TRUNCATE procrastinate_jobs CASCADE"))
    finally:
        eng.dispose()


def test_a_pending_trace_whose_job_was_lost_is_analyzed_when_a_worker_starts(settings):
    from fastapi.testclient import TestClient

    from service.jobs.worker import pending
    from service.main import create_app

    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app) as c:
        rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
        raw = (H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz").read_bytes()
        r = c.post(f"/api/v1/runs/{rid}/traces?filename=graphs.sqlite.gz", content=raw)
        assert r.status_code == 202 and r.json()["state"] == "pending"
        _wipe_queue(settings.database_url)  # the job is gone; the trace still says pending
        assert pending(app.state.settings, app.state.sessions) == 0
        drain_jobs(app)  # a worker starting: the sweep queues the analysis again
        run = c.get(f"/api/v1/runs/{rid}").json()
        assert run["traces"][0]["state"] == "done", run["traces"]
        assert run["trace_summary"]["steps"] == 10 and run["trace_summary"]["aux_gap_count"] == 30
    app.state.engine.dispose()
