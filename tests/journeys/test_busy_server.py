"""A team's server on a busy day, on SQLite and PostgreSQL, served by uvicorn: four colleagues
keep the heaviest pages open and reloading (the change points, the index, a series page) while
CI gates a pull request; every gate answers with the verdict it gives on a quiet server, the
pages answer (or, past their lane, say "busy" on one line), the change points shown after a new
run include it, and a page another site rebinds its DNS name to 127.0.0.1 for reads nothing."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import httpx

from tests.conftest import serve_live


def _runs(series: int, per: int, level: float, start: int) -> list[dict]:
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    return [{"benchmark": "busy", "config": {"tp": 2, "batch_size": 1 + s},
             "hardware": {"gpu": "NVIDIA H200", "gpu_count": 2}, "branch": "main",
             "started_at": (t0 + timedelta(minutes=i * series + s)).isoformat(),
             "metrics": {"tok_s": {"samples": [level * (1 + 0.0005 * ((i + k) % 3 - 1))
                                               for k in range(3)]}}}
            for i in range(start, start + per) for s in range(series)]


def _colleague(url: str, paths: list[str], stop: threading.Event, statuses: list[int]) -> None:
    """Reloads the pages in turn until told to stop."""
    with httpx.Client(base_url=url, timeout=60) as mine:
        k = 0
        while not stop.is_set():
            statuses.append(mine.get(paths[k % len(paths)]).status_code)
            k += 1


def test_the_gate_answers_while_the_heavy_pages_are_hammered(settings):
    for url, _app in serve_live(settings, jobs_in_process=False):
        with httpx.Client(base_url=url, timeout=60) as c:
            ids = c.post("/api/v1/runs/batch", json={"runs": _runs(3, 60, 1000.0, 0)}).json()["ids"]
            assert c.post("/api/v1/baselines", json={"name": "v1", "benchmark": "busy",
                                                     "run_ids": ids[:15]}).status_code == 201
            pr = dict(_runs(3, 1, 960.0, 60)[0], branch="pr-7", pr=7)
            cand = c.post("/api/v1/runs", json=pr).json()["id"]
            gate = {"benchmark": "busy", "baseline": "v1", "run_ids": [cand]}
            quiet = c.post("/api/v1/gate", json=gate).json()
            series = c.get("/api/v1/changepoints", params={"benchmark": "busy"}).json()
            paths = ["/api/v1/changepoints?benchmark=busy", "/",
                     f"/benchmarks/busy?series={series['series'][0]['series_id']}"]
            stop, statuses = threading.Event(), []

            hammer = [threading.Thread(target=_colleague, args=(url, paths, stop, statuses))
                      for _ in range(4)]
            for t in hammer:
                t.start()
            try:
                busy = [c.post("/api/v1/gate", json=gate) for _ in range(15)]
            finally:
                stop.set()
                for t in hammer:
                    t.join()
            assert all(r.status_code == 200 for r in busy)
            assert all(r.json()["metrics"] == quiet["metrics"] for r in busy)
            assert [m["verdict"] for m in quiet["metrics"] if m["name"] == "tok_s"] == \
                ["regression"]
            assert statuses and set(statuses) <= {200, 503} and 200 in statuses
            # a drop on the main branch: the change points read after it show it
            more = c.post("/api/v1/runs/batch", json={"runs": _runs(3, 10, 900.0, 61)})
            assert more.status_code == 201
            after = c.get("/api/v1/changepoints", params={"benchmark": "busy"}).json()
            assert all(s["change_points"] and s["change_points"][-1]["delta_pct"] < -5
                       for s in after["series"])
            # another site's name for this server reads nothing, not even the index
            for path in ("/", "/api/v1/runs"):
                r = c.get(path, headers={"Host": "rebound.attacker.example"})
                assert r.status_code == 400 and r.json()["error"]["code"] == "bad_host"
