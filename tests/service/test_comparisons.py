"""The comparisons use case at the edges, through the real app (spec/api.md v1.2 items 1-3):
few baseline runs, the spread from history, evidence metrics, intervals on the log scale, and
levels that follow alpha. On SQLite and PostgreSQL."""
from __future__ import annotations

import random

import pytest

from tests.conftest import LOCAL, minimal_run

RUN_SD, TRIAL_SD = 0.007, 0.001  # the A/A: run-to-run spread 0.7%, trials 0.1%


def run_rec(rng: random.Random, bench: str, factor: float = 1.0, i: int = 0, **over) -> dict:
    level = 1000.0 * factor * (1 + rng.gauss(0, RUN_SD))
    return minimal_run(benchmark=bench, started_at=f"2026-11-0{1 + i // 24}T{i % 24:02d}:00:00Z",
                       metrics={"tok_s": {"samples": [level * (1 + rng.gauss(0, TRIAL_SD))
                                                      for _ in range(5)]}}, **over)


def batch(client, recs: list[dict]) -> list[int]:
    r = client.post("/api/v1/runs/batch", json={"runs": recs})
    assert r.status_code == 201, r.text
    return r.json()["ids"]


def gate(client, bench: str, base_ids: list[int], cand_ids: list[int], **kw) -> dict:
    r = client.post("/api/v1/gate", json={"benchmark": bench, "baseline": "runs:" + ",".join(
        map(str, base_ids)), "run_ids": cand_ids, **kw})
    assert r.status_code == 200, r.text
    return r.json()


def test_one_run_baseline_without_history_is_never_a_regression(client):
    """A/A (and a -3% drop) with a one-run baseline and no history: inconclusive every time,
    with the spec's message; trials are never the unit."""
    rng = random.Random(20)
    for k in range(12):
        bench = f"aa-{k}"
        base, cand = batch(client, [run_rec(rng, bench, i=0),
                                    run_rec(rng, bench, 0.97 if k % 3 == 0 else 1.0, i=1, pr=5)])
        g = gate(client, bench, [base], [cand])
        m = g["metrics"][0]
        assert g["verdict"] == "inconclusive" and m["verdict"] == "inconclusive", m
        assert m["reason"] == ("the baseline has 1 run and the series no history: collect 2 more "
                               "baseline runs")
        assert m["ci_low_pct"] is None and m["spread_from"] is None


def test_with_history_false_alarms_stay_near_alpha_and_minus_3_is_found(client):
    """One run against one run, the spread from 12 runs of the series' default-branch history:
    A/A is a regression at most 1 time in 10 (by simulation, 30 draws); -3% is found."""
    rng = random.Random(21)
    bench = "hist"
    hist = batch(client, [run_rec(rng, bench, i=i) for i in range(12)])
    false_alarms = found = 0
    for k in range(30):
        # the baseline run is a release-branch run and the candidate a PR's: neither is history
        base, cand = batch(client, [run_rec(rng, bench, i=20 + k, branch="release"),
                                    run_rec(rng, bench, i=20 + k, pr=9, branch="fix")])
        g = gate(client, bench, [base], [cand])
        m = g["metrics"][0]
        assert m["spread_from"] == "history" and m["spread_runs"] == 12
        false_alarms += m["verdict"] == "regression"
    for k in range(10):
        base, cand = batch(client, [run_rec(rng, bench, i=60 + k, branch="release"),
                                    run_rec(rng, bench, 0.97, i=60 + k, pr=9, branch="fix")])
        found += gate(client, bench, [base], [cand])["metrics"][0]["verdict"] == "regression"
    assert false_alarms <= 3, false_alarms
    assert found >= 7, found
    assert len(hist) == 12


def test_intervals_never_reach_minus_100_and_levels_follow_alpha(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    recs = [minimal_run(benchmark="wild", started_at=f"2026-11-01T0{i}:00:00Z",
                        metrics={"tok_s": {"samples": [v, v * 1.01, v * 0.99]}})
            for i, v in enumerate([100.0, 160.0, 40.0, 20.0])]
    for alpha, level in ((0.05, "95%"), (0.01, "99%")):
        app = create_app(settings.model_copy(update={"gate_alpha": alpha}))
        with TestClient(app, **LOCAL) as c:
            ids = batch(c, recs) if alpha == 0.05 else [r["id"] for r in c.get(
                "/api/v1/runs", params={"benchmark": "wild"}).json()["data"]][::-1]
            g = gate(c, "wild", ids[:3], [ids[3]])
            m = g["metrics"][0]
            assert g["alpha"] == alpha and g["looks"] == 1
            assert m["ci_low_pct"] > -100 and m["bound_pct"] > -100  # linear: about -180%
            assert m["ci_low_pct"] < m["delta_pct"] < m["ci_high_pct"]
            assert f"({level} CI" in m["reason"]
            if alpha == 0.05:
                bound95 = m["bound_pct"]
            else:  # the test and the pass bound move together
                assert m["bound_pct"] < bound95
        app.state.engine.dispose()


def test_evidence_metrics_never_change_the_verdict(client):
    """One profiled run a side with a doubled aux gap: reported as evidence (its change, no
    interval), the verdict is tok_s's; naming it in `metrics` makes it gating."""
    rng = random.Random(22)
    base = [run_rec(rng, "ev", i=i) for i in range(5)]
    cand = run_rec(rng, "ev", i=6, pr=3)
    base[0]["metrics"]["aux_gap_mean_us"] = {"samples": [80.0]}
    cand["metrics"]["aux_gap_mean_us"] = {"samples": [160.0]}
    ids = batch(client, base + [cand])
    g = gate(client, "ev", ids[:5], [ids[5]], thresholds={"tok_s": 3.0})
    by = {m["name"]: m for m in g["metrics"]}
    assert by["tok_s"]["role"] == "gate" and by["tok_s"]["verdict"] == "pass"
    aux = by["aux_gap_mean_us"]
    assert aux["role"] == "evidence" and aux["delta_pct"] == pytest.approx(100.0)
    assert aux["ci_low_pct"] is None and aux["verdict"] == "inconclusive"
    assert g["verdict"] == "pass"
    g = gate(client, "ev", ids[:5], [ids[5]], metrics=["aux_gap_mean_us"])
    assert g["metrics"][0]["role"] == "gate" and g["verdict"] == "inconclusive"
