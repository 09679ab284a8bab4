"""The full alert re-evaluation as a durable job (spec/api.md, Alerts), on SQLite and
PostgreSQL: the request only queues it (202, `pending`, the inbox untouched); the job reads each
series' whole history in pages, however small a page, records its progress series by series,
and a job stopped half-way goes on after the last series it finished, raising nothing twice.
The migration that adds the evaluations also stores each stored experiment's plan."""
from __future__ import annotations

import pytest

from tests.conftest import LOCAL, count_rows, drain_jobs
from tests.service.test_alerts import leveled


def _series(bench: str, batch_size: int, parts, noise: int) -> list[dict]:
    recs = leveled(bench, parts, noise)
    for r in recs:
        r["config"] = {"tp": 1, "batch_size": batch_size}
    return recs


def _app(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    return create_app(settings.model_copy(update={"jobs_in_process": False})), \
        lambda app: TestClient(app, **LOCAL)


def test_the_request_queues_a_job_and_the_job_reads_every_page(settings, monkeypatch):
    """Three series of 80 runs (fix then regress in two of them), read 7 runs a page: the job
    finds both drops of each; the request itself judged nothing and left the inbox as it was."""
    from service.history import reads as history
    from service.runs import ingest
    from service.runs.schemas import RunIn

    monkeypatch.setattr(history, "PAGE", 7)
    app, TC = _app(settings)
    with TC(app) as c:
        fix = [(100, 20), (97, 20), (100, 20), (97, 20)]
        recs = _series("re", 1, fix, 1) + _series("re", 2, fix, 2) + _series("re", 3, [(50, 80)], 3)
        # stored as a batch is, without the evaluation its post would queue: the job alone judges
        ids, _ = ingest.store_runs(app.state.sessions, [RunIn.model_validate(r) for r in recs])
        waiting = count_rows(settings.database_url, "pending_evaluations")
        assert waiting == len(recs)
        r = c.post("/api/v1/alerts/evaluate", params={"benchmark": "re"})
        assert r.status_code == 202, r.text
        ev = r.json()
        assert ev["state"] == "pending" and ev["new"] == [] and ev["benchmark"] == "re"
        assert ev["progress"] == {"series_done": 0, "series_total": None, "runs": 0}
        assert count_rows(settings.database_url, "pending_evaluations") == waiting
        assert c.get("/api/v1/alerts").json()["count"] == 0
        drain_jobs(app)
        done = c.get(f"/api/v1/alerts/evaluations/{ev['id']}").json()
        assert done["state"] == "done" and done["finished_at"], done
        assert done["progress"] == {"series_done": 3, "series_total": 3, "runs": 240}
        alerts = c.get("/api/v1/alerts", params={"benchmark": "re"}).json()["alerts"]
        assert sorted(a["id"] for a in alerts) == sorted(done["new"])
        assert sorted(a["run_id"] for a in alerts) == [ids[20], ids[60], ids[100], ids[140]]
        assert count_rows(settings.database_url, "pending_evaluations") == 0
        # an unknown benchmark or evaluation is said at once, nothing queued
        assert c.post("/api/v1/alerts/evaluate", params={"benchmark": "nope"}).status_code == 404
        assert c.get("/api/v1/alerts/evaluations/999999").status_code == 404
    app.state.engine.dispose()


def test_a_job_stopped_half_way_goes_on_after_its_last_series(settings):
    """The worker dies after the second of four series (the pause hook raises there): the
    evaluation shows 2 of 4 series done and their alerts; the retry judges only the other two,
    and the alerts are those of one uninterrupted evaluation, none twice."""
    from service.alerts import reevaluation

    app, TC = _app(settings)
    with TC(app) as c:
        recs = []
        for b in range(4):
            recs += _series("half", b + 1, [(100, 20), (96, 20)], b)
        c.post("/api/v1/runs/batch", json={"runs": recs})
        sessions = app.state.sessions
        ev = reevaluation.start(sessions, "half", lambda i: None)
        seen: list[dict] = []

        class Killed(Exception):
            pass

        def stop_after_two():
            seen.append(c.get(f"/api/v1/alerts/evaluations/{ev['id']}").json())
            if len(seen) == 2:
                raise Killed

        with pytest.raises(Killed):
            reevaluation.run(sessions, ev["id"], after_series=stop_after_two)
        assert [(s["state"], s["progress"]["series_done"], s["progress"]["series_total"])
                for s in seen] == [("running", 1, 4), ("running", 2, 4)]
        assert len(seen[1]["new"]) == 2
        judged = []
        reevaluation.run(sessions, ev["id"], on_new=judged.append)
        done = c.get(f"/api/v1/alerts/evaluations/{ev['id']}").json()
        assert done["state"] == "done" and done["progress"]["series_done"] == 4
        assert len(judged) == 2  # the two series left, one alert each
        alerts = c.get("/api/v1/alerts", params={"benchmark": "half"}).json()
        assert alerts["count"] == 4 and sorted(done["new"]) == sorted(a["id"] for a in alerts["alerts"])
        # a second evaluation of the same history raises nothing
        again = c.post("/api/v1/alerts/evaluate", params={"benchmark": "half"}).json()
        drain_jobs(app)
        after = c.get(f"/api/v1/alerts/evaluations/{again['id']}").json()
        assert after["state"] == "done" and after["new"] == []
        assert c.get("/api/v1/alerts").json()["count"] == 4
    app.state.engine.dispose()


def test_a_job_that_gives_up_says_why(settings):
    from service.alerts import reevaluation
    from service.jobs import tasks

    app, TC = _app(settings)
    with TC(app) as c:
        ev = reevaluation.start(app.state.sessions, None, lambda i: None)
        ctx = tasks.Context(app.state.settings, app.state.sessions, app.state.queue)
        tasks.KINDS["reevaluate_alerts"].give_up(ctx, {"evaluation": ev["id"]},
                                                 "OperationalError: the database went away")
        out = c.get(f"/api/v1/alerts/evaluations/{ev['id']}").json()
        assert out["state"] == "failed" and "went away" in out["error"]
    app.state.engine.dispose()


def test_the_migration_stores_each_experiments_plan_from_its_first_run(db_url):
    """Experiments stored before plans were: the migration takes each one's plan from its
    first run's looks, not from the largest looks a later run was tagged with."""
    from sqlalchemy import create_engine, text

    from service import migrate
    from service.db import make_engine, session_factory
    from service.runs import ingest
    from service.runs.schemas import RunIn
    from tests.conftest import minimal_run

    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    recs = [RunIn.model_validate(minimal_run(
        started_at=f"2026-11-01T0{i}:00:00Z",
        experiment={"id": "old-exp", "arm": arm, "block": 0, "looks": 5}))
        for i, arm in enumerate(("baseline", "candidate", "baseline", "candidate"))]
    ids, _ = ingest.store_runs(session_factory(engine), recs)
    engine.dispose()
    eng = create_engine(db_url)
    with eng.begin() as c:  # a later run a client tagged with more looks, as before plans
        c.execute(text("UPDATE runs SET experiment_looks = 9 WHERE id = :i"), {"i": ids[1]})
        # and an experiment whose first run carries no looks: its first tagged run's count
        c.execute(text("UPDATE runs SET experiment_id = 'untagged-first', experiment_looks = "
                       "CASE WHEN id = :a THEN NULL ELSE 7 END WHERE id IN (:a, :b)"),
                  {"a": ids[2], "b": ids[3]})
    eng.dispose()
    migrate.downgrade(db_url, "0010")
    migrate.upgrade(db_url)
    eng = create_engine(db_url)
    with eng.connect() as c:
        plan = c.execute(text("SELECT experiment_id, looks, first_run_id FROM experiment_plans")).all()
        assert c.execute(text("SELECT count(*) FROM alert_evaluations")).scalar() == 0
    eng.dispose()
    assert sorted(tuple(p) for p in plan) == [("old-exp", 5, ids[0]),
                                              ("untagged-first", 7, ids[2])]


def test_the_job_judges_every_gating_metric_of_a_series(settings):
    """A series whose gating metric is cpu_tok_s (the CPU preset's), not one of the watched
    defaults: the full re-evaluation judges it as an ingest's evaluation would, and finds its
    drop."""
    from service.runs import ingest
    from service.runs.schemas import RunIn

    recs = _series("cpu", 1, [(500, 20), (400, 20)], 4)
    for r in recs:
        r["metrics"] = {"cpu_tok_s": r["metrics"].pop("tok_s")}
    app, TC = _app(settings)
    with TC(app) as c:
        ids, _ = ingest.store_runs(app.state.sessions, [RunIn.model_validate(r) for r in recs])
        ev = c.post("/api/v1/alerts/evaluate", params={"benchmark": "cpu"}).json()
        drain_jobs(app)
        alerts = c.get("/api/v1/alerts", params={"benchmark": "cpu"}).json()["alerts"]
        assert [(a["metric"], a["run_id"]) for a in alerts] == [("cpu_tok_s", ids[20])]
        assert c.get(f"/api/v1/alerts/evaluations/{ev['id']}").json()["new"] == \
            [alerts[0]["id"]]
    app.state.engine.dispose()


def test_a_second_runner_of_one_evaluation_judges_nothing_twice(settings):
    """A job put back while its first runner still works: the second runner starts between the
    first's series and finishes the evaluation; the first then finds its remaining series judged
    and counts nothing again."""
    from service.alerts import reevaluation
    from service.db import transaction
    from service.runs import ingest
    from service.runs.schemas import RunIn

    fix = [(100, 20), (97, 20)]
    recs = _series("twice", 1, fix, 1) + _series("twice", 2, fix, 2) + _series("twice", 3, fix, 3)
    app, TC = _app(settings)
    with TC(app):
        ingest.store_runs(app.state.sessions, [RunIn.model_validate(r) for r in recs])
        ev = reevaluation.start(app.state.sessions, "twice", lambda i: None)
        second: list[int] = []

        def between_series() -> None:
            if not second:  # the put-back job's runner, while the first is between series
                second.append(1)
                reevaluation.run(app.state.sessions, ev["id"])

        reevaluation.run(app.state.sessions, ev["id"], after_series=between_series)
        with transaction(app.state.sessions) as s:
            got = reevaluation.show(s, ev["id"])
        assert got["state"] == "done"
        assert got["progress"] == {"series_done": 3, "series_total": 3, "runs": 120}, got
        assert len(got["new"]) == 3
    app.state.engine.dispose()


def test_judging_a_series_holds_it_until_the_judgement_commits(settings):
    """The re-evaluation's step holds its series (an ingest's evaluation of the same series
    waits for it, so the two never judge one series from the same stored state at once)."""
    from service.alerts import evaluation
    from service.db import session_factory, transaction
    from service.history import reads as history
    from service.runs import ingest
    from service.runs.schemas import RunIn
    from tests.conftest import write_at_once

    app, TC = _app(settings)
    with TC(app):
        ids, _ = ingest.store_runs(app.state.sessions,
                                   [RunIn.model_validate(r) for r in _series("hold", 1,
                                                                             [(100, 10)], 1)])
        sessions = session_factory(app.state.engine)
        with transaction(sessions) as s:
            bench = history.get_benchmark(s, "hold")
            sid = s.execute(__import__("sqlalchemy").text(
                "SELECT series_id FROM runs WHERE id = :i"), {"i": ids[0]}).scalar()
            evaluation.reevaluate_series(s, bench, sid)
            held = write_at_once(settings.database_url,
                                 f"UPDATE series SET gpu = gpu WHERE id = {sid}")
        assert held != "ok", held
        assert write_at_once(settings.database_url,
                             f"UPDATE series SET gpu = gpu WHERE id = {sid}") == "ok"
    app.state.engine.dispose()


def test_a_reevaluation_never_waits_on_runs_an_ingest_evaluation_is_taking(settings):
    """An ingest's evaluation has taken a run of the series off the inbox and waits to hold the
    series; the re-evaluation, holding it, skips that run instead of waiting for it (which would
    be a deadlock), and the ingest's evaluation then judges it."""
    import threading

    from service.alerts import evaluation
    from service.db import session_factory, transaction
    from service.history import queries as hist_repo
    from service.history import reads as history
    from service.repositories import series as series_repo
    from service.runs import ingest
    from service.runs.schemas import RunIn

    app, TC = _app(settings)
    with TC(app):
        recs = _series("skip", 1, [(100, 12)], 1)
        ids, _ = ingest.store_runs(app.state.sessions, [RunIn.model_validate(r) for r in recs])
        sessions = session_factory(app.state.engine)
        ingest_side = sessions()
        try:
            with transaction(sessions) as s:
                bench = history.get_benchmark(s, "skip")
            taken = hist_repo.take_pending(ingest_side, bench.id, 1)  # held, not committed
            assert taken == [ids[0]]
            done: list = []

            def reevaluate() -> None:
                with transaction(sessions) as s:
                    sid = series_repo.series_of_benchmark(s, bench.id)[0].id
                    done.append(evaluation.reevaluate_series(s, bench, sid))

            t = threading.Thread(target=reevaluate, daemon=True)
            if settings.database_url.startswith("sqlite"):
                ingest_side.rollback()  # one writer at a time: nothing to skip there
            t.start()
            t.join(20)
            assert not t.is_alive(), "the re-evaluation waited on the ingest's taken run"
            assert done and done[0][1] == 12
        finally:
            ingest_side.rollback()
            ingest_side.close()
    app.state.engine.dispose()
