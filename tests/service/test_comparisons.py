"""The comparisons use case at the edges, through the real app (spec/api.md, Gating and evidence
metrics to Intervals and levels):
few baseline runs, the spread from history, evidence metrics, intervals on the log scale, and
levels that follow alpha. On SQLite and PostgreSQL."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from collectors.engines.vllm import serve_metrics
from tests.conftest import LOCAL, drain_jobs, minimal_run

RUN_SD, TRIAL_SD = 0.007, 0.001  # the A/A design: run-to-run spread 0.7%, trials 0.1%


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
        assert m["reason"] == ("n=1: no interval (1 vs 1 runs); the baseline has 1 run and the "
                               "series no history: collect 2 more baseline runs")
        assert m["ci_low_pct"] is None and m["spread_from"] is None
        assert m["delta_pct"] is not None  # the change is shown without an interval


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


QUIET = [1.0 + 0.002 * z for z in (-1.2, 0.4, 0.9, -0.3, 1.5, -0.8, 0.1, -1.6, 0.7, 0.3,
                                   -0.5, 1.1, -0.9, 0.6, -0.2, 1.3, -1.1, 0.2, -0.4, 0.8)]
NOISY = [0.9845, 0.995, 1.0, 1.005, 1.0155]  # five candidate runs, run-to-run sd 1.15%


def flat_run(bench: str, level: float, i: int, gpu_count: int = 1, **over) -> dict:
    return minimal_run(benchmark=bench, started_at=f"2026-11-0{1 + i // 24}T{i % 24:02d}:00:00Z",
                       hardware={"gpu": "NVIDIA H200", "gpu_count": gpu_count},
                       metrics={"tok_s": {"samples": [1000 * level * f for f in
                                                      (0.9995, 1.0, 1.0005)]},
                                "req_s": {"samples": [10 * level * f for f in
                                                      (0.9995, 1.0, 1.0005)]}}, **over)


def test_few_run_baseline_is_never_narrower_than_the_candidate(client):
    """One baseline run, a quiet history (0.2%), five candidate runs spread 1.15% run to run: the
    spread is the history's pooled with the candidate's runs (their sums of squares over the
    summed df), the bound about -1%, and the verdict is not a pass (the history's spread alone
    gave a bound of -0.41% and a pass)."""
    import math

    from scipy import stats

    batch(client, [flat_run("few", lv, i) for i, lv in enumerate(QUIET)])
    base = batch(client, [flat_run("few", 1.0, 30, branch="release")])
    cand = batch(client, [flat_run("few", lv, 31 + j, pr=4, branch="fix")
                          for j, lv in enumerate(NOISY)])
    m = next(x for x in gate(client, "few", base, cand)["metrics"] if x["name"] == "tok_s")
    assert m["spread_from"] == "history" and m["spread_runs"] == len(QUIET), m
    logs, hist = [math.log(lv) for lv in NOISY], [math.log(v) for v in QUIET]
    ss = sum((x - sum(g) / len(g)) ** 2 for g in (logs, hist) for x in g)
    df = len(logs) - 1 + len(hist) - 1
    d = sum(logs) / 5 - math.log(1.0)
    expect = 100 * math.expm1(d - stats.t.ppf(0.95, df) * math.sqrt(ss / df) * math.sqrt(1 + 1 / 5))
    assert m["bound_pct"] == pytest.approx(expect, abs=1e-6)
    assert m["verdict"] == "inconclusive" and m["bound_pct"] < -0.5, m
    # the history's spread alone: what the bound was before the candidate's spread counted
    hist_sd = stats.tstd(hist)
    assert 100 * math.expm1(d - stats.t.ppf(0.95, 19) * hist_sd * math.sqrt(1.2)) > -0.8


def test_few_run_history_spread_is_one_query_per_request(client):
    """The history spread of every few-run comparison (series x metric) comes from one
    statement: as many statements for three series as for one."""
    from sqlalchemy import event

    def load(bench: str, counts: range) -> tuple[list[int], list[int]]:
        recs, base, cand = [], [], []
        for g in counts:
            recs += [flat_run(bench, lv, i, gpu_count=g) for i, lv in enumerate(QUIET)]
        batch(client, recs)
        for g in counts:
            base += batch(client, [flat_run(bench, 1.0, 30, gpu_count=g, branch="release")])
            cand += batch(client, [flat_run(bench, 0.999, 31, gpu_count=g, pr=4)])
        return base, cand

    engine = client.app.state.engine
    statements: list[str] = []

    def seen(conn, cursor, statement, params, context, executemany):
        if "jobs" not in statement.lower():  # the durable-job queue's polling is not the gate's
            statements.append(statement)

    counts = {}
    for bench, gpus in (("one", range(1, 2)), ("three", range(1, 4))):
        base, cand = load(bench, gpus)
        drain_jobs(client.app)  # the ingest's follow-up jobs run before, not during, the count
        event.listen(engine, "before_cursor_execute", seen)
        try:
            statements.clear()
            g = gate(client, bench, base, cand)
        finally:
            event.remove(engine, "before_cursor_execute", seen)
        assert {m["spread_from"] for m in g["metrics"]} == {"history"}
        assert len(g["metrics"]) == 2 * len(gpus)
        counts[bench] = len(statements)
        assert sum("row_number" in s.lower() for s in statements) == 1, statements
    assert counts["one"] == counts["three"], counts


SERVE = Path(__file__).resolve().parent.parent / "data" / "engines" / "serve.json"
JITTER = (0.998, 1.001, 0.999, 1.002, 1.0)  # five runs' levels, 0.16% run to run


def serve_run(bench: str, i: int, level: float, tails: float = 1.0) -> dict:
    """One `vllm bench serve` result read by the vLLM reader: every figure at `level`, the
    p99 latencies also moved by `tails`."""
    obj = json.loads(SERVE.read_text())
    for k, v in list(obj.items()):
        if isinstance(v, float) and (k.endswith("_ms") or k.endswith("throughput")):
            obj[k] = v * level * (tails if k.startswith("p99_") else 1.0)
    return minimal_run(benchmark=bench, started_at=f"2026-11-01T{i:02d}:00:00Z",
                       metrics={n: {"samples": [v]} for n, v in serve_metrics(SERVE, obj).items()})


def test_a_serve_result_is_judged_by_its_latency_medians(client):
    """Medians hold and every p99 rises 3% against a 1% threshold: the gate passes, each
    family's median gating and its p99 and std (and its mean, beside the median) shown as
    evidence; a request naming the p99 makes it gating, and then it regresses."""
    base = batch(client, [serve_run("serve", i, lv) for i, lv in enumerate(JITTER)])
    cand = batch(client, [serve_run("serve", 10 + i, lv, tails=1.03)
                          for i, lv in enumerate(reversed(JITTER))])
    g = gate(client, "serve", base, cand)
    roles = {m["name"]: m["role"] for m in g["metrics"]}
    assert {n for n, r in roles.items() if r == "gate"} == {
        "tok_s", "total_tok_s", "req_s", "ttft_ms_median", "tpot_ms_median", "itl_ms_median"}
    for kind in ("ttft", "tpot", "itl"):
        assert roles[f"{kind}_ms_p99"] == roles[f"{kind}_ms_mean"] == "evidence"
    p99 = next(m for m in g["metrics"] if m["name"] == "ttft_ms_p99")
    assert p99["delta_pct"] == pytest.approx(3.0, abs=0.01) and p99["verdict"] == "regression"
    assert g["verdict"] == "pass", [(m["name"], m["verdict"], m["reason"]) for m in g["metrics"]]
    named = gate(client, "serve", base, cand, metrics=["ttft_ms_median", "ttft_ms_p99"])
    assert named["verdict"] == "fail"
    assert {m["name"]: m["role"] for m in named["metrics"]} == {"ttft_ms_median": "gate",
                                                                 "ttft_ms_p99": "gate"}
