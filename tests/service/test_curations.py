"""Curation through the real app: a mute keeps a metric of a series from deciding (judged,
shown, audited, withdrawn), an expected change point moves the series' reference level (the
gate's history spread starts there, the alert at that run is closed). On SQLite and PostgreSQL."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from service.db import make_engine, session_factory, transaction
from service.usecases import tokens
from tests.conftest import drain_jobs, minimal_run


def rec(bench: str, level: float, i: int, rng: random.Random, **over) -> dict:
    lv = level * (1 + rng.gauss(0, 0.002))
    return minimal_run(benchmark=bench, started_at=f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z",
                       metrics={"tok_s": {"samples": [lv * (1 + rng.gauss(0, 0.001))
                                                      for _ in range(5)]}}, **over)


def post(client, recs: list[dict]) -> list[int]:
    r = client.post("/api/v1/runs/batch", json={"runs": recs})
    assert r.status_code == 201, r.text
    return r.json()["ids"]


def gate(client, bench: str, base: list[int], cand: list[int]) -> dict:
    r = client.post("/api/v1/gate", json={"benchmark": bench, "baseline": "runs:" + ",".join(
        map(str, base)), "run_ids": cand})
    assert r.status_code == 200, r.text
    return r.json()


def soon(days: float = 7) -> str:
    return (datetime.now(timezone.utc) + timedelta(days=days)).isoformat()


def test_a_mute_keeps_the_metric_from_deciding_until_withdrawn(client):
    rng = random.Random(3)
    base = post(client, [rec("m", 1000, i, rng, branch="rel") for i in range(3)])
    cand = post(client, [rec("m", 950, 3 + i, rng, pr=4, branch="fix") for i in range(3)])
    before = gate(client, "m", base, cand)
    assert before["verdict"] == "fail" and before["curations"] == []
    sid = before["metrics"][0]["series_id"]
    r = client.post("/api/v1/benchmarks/m/curations", json={
        "kind": "mute", "series_id": sid, "metric": "tok_s", "note": "  clocks   locked low  ",
        "expires_at": soon()})
    assert r.status_code == 201, r.text
    c = r.json()
    assert c["created_by"] == "local" and c["note"] == "clocks locked low" and c["in_force"]
    assert "muted until" in c["line"] and c["withdrawn_at"] is None
    after = gate(client, "m", base, cand)
    m = after["metrics"][0]
    assert after["verdict"] == "inconclusive"  # nothing left to decide, never a pass
    assert m["verdict"] == "regression" and "clocks locked low" in m["muted"]
    assert m["reason"].startswith("muted, until")
    assert [x["id"] for x in after["curations"]] == [c["id"]]
    gone = client.delete(f"/api/v1/curations/{c['id']}")
    assert gone.status_code == 200 and gone.json()["withdrawn_by"] == "local"
    assert not gone.json()["in_force"]
    assert client.delete(f"/api/v1/curations/{c['id']}").status_code == 409
    assert gate(client, "m", base, cand)["verdict"] == "fail"
    assert client.get("/api/v1/benchmarks/m/curations").json()["count"] == 0
    audit = client.get("/api/v1/benchmarks/m/curations?all=true").json()["data"]
    assert [(a["id"], a["created_by"], a["withdrawn_by"]) for a in audit] == \
        [(c["id"], "local", "local")]


def test_an_expected_change_moves_the_reference_level_and_closes_its_alert(client):
    rng = random.Random(5)
    old = post(client, [rec("e", 1000, i, rng) for i in range(12)])
    new = post(client, [rec("e", 900, 12 + i, rng) for i in range(12)])
    drain_jobs(client.app)
    alerts = client.get("/api/v1/alerts?benchmark=e").json()["alerts"]
    assert [(a["run_id"], a["state"]) for a in alerts] == [(new[0], "open")]
    base = post(client, [rec("e", 900, 30, rng, branch="rel")])
    cand = post(client, [rec("e", 900, 31, rng, pr=8, branch="fix")])
    m = gate(client, "e", base, cand)["metrics"][0]
    assert m["spread_from"] == "history" and m["spread_runs"] == len(old) + len(new)
    r = client.post("/api/v1/benchmarks/e/curations", json={
        "kind": "expected", "series_id": m["series_id"], "metric": "tok_s", "run_id": new[0],
        "note": "larger model shard: slower by design"})
    assert r.status_code == 201, r.text
    c = r.json()
    assert c["closed_alerts"] == [alerts[0]["id"]] and c["expires_at"] is None
    assert "expected change at run" in c["line"] and "reference level moves" in c["line"]
    assert client.get("/api/v1/alerts?benchmark=e").json()["alerts"][0]["state"] == "closed"
    g = gate(client, "e", base, cand)
    m = g["metrics"][0]
    assert m["spread_runs"] == len(new)  # the history spread starts at the new level
    assert g["curations"][0]["kind"] == "expected" and m["muted"] is None


def test_bad_curations_are_refused_in_one_line_and_nothing_is_stored(client):
    rng = random.Random(7)
    a = post(client, [rec("b", 1000, 0, rng)])
    other = post(client, [rec("b", 1000, 1, rng, config={"tp": 2, "batch_size": 1})])
    sid = gate(client, "b", a, a)["metrics"][0]["series_id"]
    bad = [
        ({"kind": "mute", "series_id": sid, "metric": "tok_s", "note": "x"}, 422),
        ({"kind": "mute", "series_id": sid, "metric": "tok_s", "note": "x",
          "expires_at": soon(400)}, 422),
        ({"kind": "mute", "series_id": sid, "metric": "tok_s", "note": "x",
          "expires_at": "2027-01-01T00:00:00"}, 422),
        ({"kind": "mute", "series_id": sid, "metric": "tok_s", "note": "   ",
          "expires_at": soon()}, 422),
        ({"kind": "expected", "series_id": sid, "metric": "tok_s", "note": "x",
          "run_id": other[0]}, 404),
        ({"kind": "expected", "series_id": sid, "metric": "ttft_ms", "note": "x",
          "run_id": a[0]}, 422),
        ({"kind": "expected", "series_id": 999999, "metric": "tok_s", "note": "x",
          "run_id": a[0]}, 404),
        ({"kind": "expected", "series_id": sid, "metric": "tok_s", "note": "x" * 1001,
          "run_id": a[0]}, 422),
    ]
    for body, status in bad:
        r = client.post("/api/v1/benchmarks/b/curations", json=body)
        assert r.status_code == status, (body, r.text)
        assert "\n" not in r.json()["error"]["message"]
    assert client.post("/api/v1/benchmarks/nope/curations", json={
        "kind": "expected", "series_id": sid, "metric": "tok_s", "note": "x",
        "run_id": a[0]}).status_code == 404
    assert client.get("/api/v1/benchmarks/b/curations?all=true").json()["count"] == 0


def test_who_is_the_token_and_a_read_token_cannot_curate(client, settings):
    rng = random.Random(9)
    a = post(client, [rec("t", 1000, 0, rng)])
    sid = gate(client, "t", a, a)["metrics"][0]["series_id"]
    with transaction(session_factory(make_engine(settings.database_url))) as s:
        writer = tokens.create(s, "release-bot", "write")
        reader = tokens.create(s, "viewer", "read")
    client.app.state.no_tokens_until = 0.0  # the server trusts "no token" for up to a second
    body = {"kind": "mute", "series_id": sid, "metric": "tok_s", "note": "flaky runner",
            "expires_at": soon(1)}
    assert client.post("/api/v1/benchmarks/t/curations", json=body).status_code == 401
    r = client.post("/api/v1/benchmarks/t/curations", json=body,
                    headers={"Authorization": f"Bearer {reader}"})
    assert r.status_code == 403
    r = client.post("/api/v1/benchmarks/t/curations", json=body,
                    headers={"Authorization": f"Bearer {writer}"})
    assert r.status_code == 201 and r.json()["created_by"] == "release-bot"


def test_a_hostile_note_is_one_line_and_never_markup(client):
    rng = random.Random(13)
    a = post(client, [rec("h", 1000, 0, rng)])
    sid = gate(client, "h", a, a)["metrics"][0]["series_id"]
    note = "<script>alert(1)</script>\n## heading\r\n[x](javascript:alert(1))"
    r = client.post("/api/v1/benchmarks/h/curations", json={
        "kind": "mute", "series_id": sid, "metric": "tok_s", "note": note, "expires_at": soon()})
    assert r.status_code == 201, r.text
    assert "\n" not in r.json()["note"] and "\n" not in r.json()["line"]
    page = client.get("/benchmarks/h").text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    from service.gate.schemas import GateOut
    from service.github.markdown import verdict_table

    body = "\n".join(verdict_table(GateOut.model_validate(gate(client, "h", a, a))))
    assert "<script>" not in body and "\n## heading" not in body


def _home_row(client, bench: str) -> str:
    """The benchmark's row of the home page, as text."""
    import html
    import re

    page = client.get("/", params={"q": bench}).text
    row = page.split(f'href="/benchmarks/{bench}"', 1)[1].split("</tr>", 1)[0]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", row)))


def test_the_home_page_says_a_mute_the_moment_it_is_set_and_its_withdrawal(client):
    rng = random.Random(5)
    base = post(client, [rec("h", 1000, i, rng, branch="main") for i in range(3)])
    r = client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "h", "run_ids": base})
    assert r.status_code == 201, r.text
    (newest,) = post(client, [rec("h", 900, 3, rng, branch="main")])
    row = _home_row(client, "h")
    assert "regression" in row and "muted" not in row, row  # the stored standing, judged once
    sid = client.get(f"/api/v1/runs/{newest}").json()["series_id"]
    # the id the curate command asks for is on the series' page
    assert f'id="series-id">series {sid}<' in client.get(f"/benchmarks/h?series={sid}").text
    r = client.post("/api/v1/benchmarks/h/curations", json={
        "kind": "mute", "series_id": sid, "metric": "tok_s", "note": "clocks locked low",
        "expires_at": soon()})
    assert r.status_code == 201, r.text
    row = _home_row(client, "h")  # no new run: the mute alone makes the standing stale
    assert "regression (muted)" in row, row
    assert client.delete(f"/api/v1/curations/{r.json()['id']}").status_code == 200
    row = _home_row(client, "h")
    assert "regression" in row and "muted" not in row, row
