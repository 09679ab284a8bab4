"""The heavy reads: change points kept per revision of a benchmark's runs (a new or deleted run
is never answered from what was kept before it), the index's stored standing judged again when
the runs or the baseline change, and the lane that keeps heavy reads from taking the capacity
the gate needs."""
from __future__ import annotations

import asyncio
import json
import re

import httpx

from tests.conftest import count_rows, minimal_run


def _run(i: int, level: float, **over) -> dict:
    return minimal_run(started_at=f"2026-03-01T00:{i:02d}:00Z", label=f"r{i}",
                       metrics={"tok_s": {"samples": [level + 0.1 * (i % 3), level - 0.1 * (i % 3),
                                                      level]}}, **over)


def _post(client, runs: list[dict]) -> list[int]:
    r = client.post("/api/v1/runs/batch", json={"runs": runs})
    assert r.status_code == 201, r.text
    return r.json()["ids"]


def test_change_points_follow_every_ingest_and_delete(client):
    from service.stats.history import change_points

    _post(client, [_run(i, 100.0) for i in range(8)])
    first = client.get("/api/v1/changepoints", params={"benchmark": "bench-a"}).json()
    assert [s["change_points"] for s in first["series"]] == [[]]
    assert client.get("/api/v1/changepoints", params={"benchmark": "bench-a"}).json() == first
    ids = _post(client, [_run(i, 90.0) for i in range(8, 16)])  # a 10% drop after the kept answer
    after = client.get("/api/v1/changepoints", params={"benchmark": "bench-a"}).json()
    [cp] = after["series"][0]["change_points"]
    means = [r["metrics"]["tok_s"]["mean"] for r in sorted(
        client.get("/api/v1/runs", params={"benchmark": "bench-a", "limit": 100}).json()["data"],
        key=lambda r: r["started_at"])]
    [want] = change_points(means, 0.5)
    assert (cp["index"], cp["run_id"], cp["delta_pct"]) == (want.index, ids[0], want.delta_pct)
    assert cp["started_at"] == "2026-03-01T00:08:00Z"
    for i in ids:  # the drop deleted: the kept answer with a change point is not served
        assert client.delete(f"/api/v1/runs/{i}").status_code == 200
    gone = client.get("/api/v1/changepoints", params={"benchmark": "bench-a"}).json()
    assert gone["series"][0]["change_points"] == []


def test_a_record_posted_twice_counts_once_in_the_change_points(client):
    runs = [_run(i, 100.0 if i < 6 else 90.0) for i in range(12)]
    _post(client, runs)
    again = dict(runs[7], started_at="2026-03-01T00:30:00Z")  # the same body: not a new run
    again["started_at"] = runs[7]["started_at"]
    _post(client, [dict(again, idempotency_key="second-post")])
    [cp] = client.get("/api/v1/changepoints",
                      params={"benchmark": "bench-a"}).json()["series"][0]["change_points"]
    assert cp["index"] == 6


def _verdicts(client) -> str:
    row = re.search(r'<tr data-benchmark="bench-a">.*?</tr>', client.get("/").text, re.S)
    return re.sub(r"<[^>]+>", " ", row.group(0))


def test_the_index_stores_each_standing_and_judges_again_when_runs_or_baseline_change(
        client, settings):
    ids = _post(client, [_run(i, 100.0) for i in range(6)])
    assert client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "bench-a",
                                                  "run_ids": ids[:5]}).status_code in (200, 201)
    assert "pass" in _verdicts(client) or "inconclusive" in _verdicts(client)
    assert count_rows(settings.database_url, "summaries WHERE kind = 'verdicts'") == 1
    _post(client, [_run(6, 80.0)])  # a 20% drop: the stored standing no longer covers the runs
    assert "regression" in _verdicts(client)
    # the baseline moved to the slow run's level: judged again, no regression against it
    slow = _post(client, [_run(i, 80.0) for i in range(7, 12)])
    assert client.put("/api/v1/baselines/bench-a/v1", json={"run_ids": slow[:4]}).status_code == 200
    assert "regression" not in _verdicts(client)
    assert count_rows(settings.database_url, "summaries WHERE kind = 'verdicts'") == 1


def test_heavy_reads_wait_in_their_own_lane_and_the_gate_does_not(settings):
    from service.api.lanes import Lanes

    held = asyncio.Event()
    entered: list[str] = []

    async def app(scope, receive, send):
        entered.append(scope["path"])
        if scope["path"] == "/api/v1/changepoints":
            await held.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    lanes = Lanes(app, settings.model_copy(update={"heavy_reads": 1, "heavy_queue": 1}))

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(lanes),
                                     base_url="http://localhost") as c:
            first = asyncio.create_task(c.get("/api/v1/changepoints"))
            await asyncio.sleep(0.05)
            second = asyncio.create_task(c.get("/"))  # waits for the lane's one place
            await asyncio.sleep(0.05)
            gate = await asyncio.wait_for(c.post("/api/v1/gate", content=b"{}"), 2)
            refused = await c.get("/benchmarks/x")  # one waiting already: refused at once
            assert entered == ["/api/v1/changepoints", "/api/v1/gate"]
            held.set()
            return gate, refused, await first, await second

    gate, refused, first, second = asyncio.run(go())
    assert gate.status_code == first.status_code == second.status_code == 200
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert "\n" not in refused.text and json.loads(refused.text)["error"]["code"] == "busy"


def test_the_index_gates_an_experiment_once_per_revision_of_its_benchmark(client, monkeypatch):
    """The home page's decisions: an experiment's verdict is judged when the benchmark's runs or
    curations change, not on every view."""
    from service.gate import verdicts
    from tests.service.test_experiments import post_experiment

    gates: list[object] = []
    judge = verdicts.gate

    def counted(session, req, alpha):
        gates.append(req.experiment)
        return judge(session, req, alpha)

    monkeypatch.setattr(verdicts, "gate", counted)
    post_experiment(client, "slow", 0.99)
    page = client.get("/").text
    assert 'href="/experiments/slow"' in page and gates == ["slow"]
    for _ in range(3):
        assert client.get("/").text.count('href="/experiments/slow"') == 1
    assert gates == ["slow"]  # kept: no gate per view
    client.post("/api/v1/runs", json=minimal_run(benchmark="ab", label="later"))
    client.get("/")
    assert gates == ["slow", "slow"]  # a new run of the benchmark: judged again


def test_the_index_shows_a_hundred_benchmarks_a_page_and_filters_by_name(client):
    _post(client, [minimal_run(benchmark=f"b{i:03d}", started_at=f"2026-03-01T{i // 60:02d}:"
                               f"{i % 60:02d}:00Z") for i in range(105)])
    first = client.get("/").text
    assert first.count('<tr data-benchmark="') == 100
    assert "benchmarks 1–100 of 105" in first and 'rel="next" href="/?page=2"' in first
    assert '<tr data-benchmark="b104">' in first and '<tr data-benchmark="b004">' not in first
    second = client.get("/", params={"page": 2}).text
    assert re.findall(r'<tr data-benchmark="([^"]+)"', second) == [f"b{i:03d}" for i in
                                                                   range(4, -1, -1)]
    assert "benchmarks 101–105 of 105" in second and 'rel="prev" href="/?page=1"' in second
    assert 'rel="next"' not in second
    found = client.get("/", params={"q": "B10"}).text  # any case
    assert re.findall(r'<tr data-benchmark="([^"]+)"', found) == [f"b{i}" for i in
                                                                  range(104, 99, -1)]
    assert "benchmarks 1–5 of 5" in found
    none = client.get("/", params={"q": "<script>"}).text
    assert "no benchmark whose name holds “&lt;script&gt;”" in none and "<script>\"" not in none
    assert client.get("/", params={"page": 0}).status_code == 422


def _kept_and_counted(url: str) -> tuple[list, list]:
    from sqlalchemy import create_engine, text

    eng = create_engine(url)
    with eng.connect() as c:
        kept = c.execute(text(
            "SELECT b.name, coalesce(sum(k.runs), 0), max(k.top), max(k.latest) FROM benchmarks b "
            "LEFT JOIN benchmark_counts k ON k.benchmark_id = b.id GROUP BY b.name "
            "ORDER BY b.name")).all()
        counted = c.execute(text(
            "SELECT b.name, count(r.id), max(r.id), max(r.started_at) FROM benchmarks b "
            "LEFT JOIN runs r ON r.benchmark_id = b.id GROUP BY b.name ORDER BY b.name")).all()
    eng.dispose()
    return [tuple(r) for r in kept], [tuple(r) for r in counted]


def test_the_benchmarks_run_counts_follow_every_insert_and_delete(client, settings):
    """The revision the cached reads are keyed by (run count, newest run id) and the home
    page's order (newest run time) are kept by triggers on `runs`: after a batch of two
    benchmarks, a single run, the newest run deleted and an older one, they equal a count over
    the runs."""
    url = settings.database_url
    ids = _post(client, [_run(i, 100.0) for i in range(5)]
                + [_run(i, 50.0, benchmark="bench-b") for i in range(5, 8)])
    single = _post(client, [_run(20, 100.0)])
    kept, counted = _kept_and_counted(url)
    assert kept == counted and [r[1] for r in kept] == [6, 3]
    for gone in (single[0], ids[0], ids[-1]):  # the newest of a, an older one of a, all of b's newest
        assert client.delete(f"/api/v1/runs/{gone}").status_code == 200
        kept, counted = _kept_and_counted(url)
        assert kept == counted
    assert [r[1] for r in kept] == [4, 2]
    home = client.get("/").text
    assert home.index("bench-b") < home.index("bench-a")  # newest run first: b's 00:06, a's 00:04
