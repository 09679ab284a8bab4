"""The start-up sweep: a trace left `pending` whose analysis job was lost (the queue
wiped, the database restored from a backup) is analyzed once a worker starts."""
from __future__ import annotations

from sqlalchemy import create_engine, text

from tests.conftest import H200, LOCAL, drain_jobs, minimal_run


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


def _worker_died(eng, settings, run: int) -> None:
    """Every job is running its `run`-th time (1: the first) on a worker that died: no lease
    renewed, no heartbeat for an hour."""
    with eng.begin() as c:
        if settings.is_sqlite:  # the table counts a claim as an attempt
            c.execute(text("UPDATE jobs SET state = 'doing', attempts = :n, worker = 'dead', "
                           "locked_until = '2000-01-01 00:00:00'"), {"n": run})
        else:  # procrastinate counts the retries before this run
            wid = c.execute(text("INSERT INTO procrastinate_workers (last_heartbeat) VALUES "
                                 "(now() - interval '1 hour') RETURNING id")).scalar_one()
            c.execute(text("UPDATE procrastinate_jobs SET status = 'doing', attempts = :n, "
                           "worker_id = :w"), {"n": run - 1, "w": wid})


def test_a_pending_trace_whose_job_was_lost_is_analyzed_when_a_worker_starts(settings):
    from fastapi.testclient import TestClient

    from service.jobs.worker import pending
    from service.main import create_app

    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
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


def test_a_killed_workers_job_whose_key_waits_again_is_closed_not_doubled(settings):
    """A worker died running a job; before any worker put it back, the same work was queued
    again (the start-up sweep, a new upload). On PostgreSQL the waiting job stands for it:
    putting the dead one back too would break the key's unique index (the worker used to stop
    there). On SQLite both stay and both run (the work is idempotent): a lease that ran out
    does not prove the worker dead, so coalescing with it could drop the new work."""
    import asyncio

    from service.db import make_engine, session_factory
    from service.jobs import queue as jobs_queue
    from service.jobs.tasks import enqueue_trace

    eng = make_engine(settings.database_url)
    sessions = session_factory(eng)
    q = jobs_queue.open_queue(settings, sessions)
    try:
        enqueue_trace(q, 7)
        _worker_died(eng, settings, 1)  # the job's worker takes it, then dies
        enqueue_trace(q, 7)
        if settings.is_sqlite:  # a waiting copy beside the dead worker's job
            with eng.connect() as c:
                rows = list(c.execute(text("SELECT state FROM jobs ORDER BY id")))
            assert rows == [("doing",), ("todo",)]
        else:  # a waiting copy is queued; the sweep closes the dead one instead of putting it back
            from service.jobs import pg

            app = pg.make_app(settings)

            async def sweep() -> int:
                async with app.open_async():
                    return await pg._sweep(app, settings)

            assert asyncio.run(sweep()) == 1
            with eng.connect() as c:
                rows = sorted(c.execute(text("SELECT status FROM procrastinate_jobs")))
            assert rows == [("failed",), ("todo",)]
    finally:
        q.close()
        eng.dispose()


def test_a_job_whose_workers_died_on_every_attempt_fails_for_good(settings):
    """A trace whose analysis kills its worker each time (the kernel's OOM killer, a crash in C)
    is not put back without end: once its attempts are spent the job fails, the trace says why,
    and no later worker start queues it again."""
    from fastapi.testclient import TestClient

    from service.jobs.worker import pending
    from service.main import create_app

    app = create_app(settings.model_copy(update={"jobs_in_process": False, "job_attempts": 3}))
    eng = app.state.engine
    with TestClient(app, **LOCAL) as c:
        rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
        raw = (H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz").read_bytes()
        r = c.post(f"/api/v1/runs/{rid}/traces?filename=graphs.sqlite.gz", content=raw)
        assert r.status_code == 202
        _worker_died(eng, settings, 3)  # its third run's worker died
        drain_jobs(app)
        (trace,) = c.get(f"/api/v1/runs/{rid}").json()["traces"]
        assert trace["state"] == "failed", trace
        assert "gave up after 3 attempts (the worker stopped each time)" in trace["error"]
        assert pending(app.state.settings, app.state.sessions) == 0
        drain_jobs(app)  # a later worker start: the sweep leaves a failed trace alone
        assert c.get(f"/api/v1/runs/{rid}").json()["traces"][0]["state"] == "failed"
    eng.dispose()
