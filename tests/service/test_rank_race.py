"""Two ranks of one trace set whose analyses end at the same moment (two workers, or the
in-process worker beside `perfwarden worker --drain`): each must see the other, so the run's
summary covers the set, on SQLite as on PostgreSQL."""
from __future__ import annotations

import hashlib
import threading

from tests.conftest import LOCAL, ROOT, minimal_run

RANKS = [ROOT / "data/h200/resident/torch/traces/trace_M1_rank0.json.gz",
         ROOT / "data/h200/resident/torch/traces/trace_M1_rank1.json.gz"]


def test_two_ranks_finishing_together_record_the_set(settings, monkeypatch):
    from fastapi.testclient import TestClient

    from service.main import create_app
    from service.traces import attach as traces

    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
        refs = []
        for p in RANKS:
            raw = p.read_bytes()
            r = c.post(f"/api/v1/traces/stage?filename={p.name}", content=raw,
                       headers={"content-type": "application/octet-stream"})
            assert r.status_code in (200, 201), r.text
            refs.append({"filename": p.name, "sha256": hashlib.sha256(raw).hexdigest()})
        r = c.post("/api/v1/runs/batch", json={"runs": [minimal_run(benchmark="rank-race")],
                                               "traces": [refs]})
        assert r.status_code == 201, r.text
        run_id = r.json()["ids"][0]
        ids = [t["id"] for t in c.get(f"/api/v1/runs/{run_id}").json()["traces"]]
        assert len(ids) == 2

        # both jobs read the set before either records: without a lock that holds the second
        # until the first commits, each sees the other still pending (the wait gives up after a
        # while, which is what happens when the lock holds the second job back)
        from service.runs import queries as runs_repo

        meet = threading.Barrier(2)
        real = runs_repo.traces_of

        def read_then_meet(*a, **kw):  # noqa: ANN002, ANN003
            out = real(*a, **kw)
            if threading.current_thread().name.startswith("rank-job"):
                try:
                    meet.wait(timeout=3)
                except threading.BrokenBarrierError:
                    pass
            return out

        monkeypatch.setattr(runs_repo, "traces_of", read_then_meet)
        errors: list[BaseException] = []

        def job(trace_id: int) -> None:
            try:
                traces.analyze_pending(app.state.sessions, settings.data_dir, trace_id)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        workers = [threading.Thread(target=job, args=(i,), name=f"rank-job-{i}") for i in ids]
        for w in workers:
            w.start()
        for w in workers:
            w.join(120)
        assert not errors, errors
        run = c.get(f"/api/v1/runs/{run_id}").json()
        assert [t["state"] for t in run["traces"]] == ["done", "done"]
        summary = run["trace_summary"]
        assert summary is not None, "neither rank saw the other done"
        assert [r["rank"] for r in summary["ranks"]] == [0, 1]
