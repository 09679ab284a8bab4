"""One metric registry (collectors/metrics.py): every reader's metrics agree with it, the
service and the migrations use it, and a real vLLM serve result with end-to-end latency gates
lower-is-better."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import create_engine, text

from collectors.engines.ingest import ingest
from collectors.metrics import FIXED, lookup, seed_rows
from tests.conftest import DATA, H200

ENGINE_FILES = ["serve.json", "serve_e2el.json", "sglang_bench_serving.jsonl", "sweep.jsonl", "throughput.json", "latency.json",
                "sglang.log", "vllm_merged.log", "vllm_split.log", "vllm_old.log"]


def emitted() -> list[tuple[str, str, str, str]]:
    """(source, metric, unit, direction) of every metric any reader writes."""
    out = []
    for name in ENGINE_FILES:
        for rec in ingest([DATA / "engines" / name], benchmark="b", batch_size=1, output_len=128)[0]:
            out += [(name, m, v["unit"], v["direction"]) for m, v in rec["metrics"].items()]
    for f in sorted((H200 / "runs").glob("*.json")):  # the decode benchmark, trace metrics included
        for rec in json.loads(f.read_text()):
            out += [(f.name, m, v["unit"], v["direction"]) for m, v in rec["metrics"].items()]
    return out


def test_every_emitted_metric_matches_the_registry():
    rows = emitted()
    names = {m for _, m, _, _ in rows}
    assert {"tok_s", "kv_capacity_tokens", "e2el_ms_mean", "ttft_ms_p99", "latency_s",
            "total_tok_s", "aux_gap_mean_us"} <= names
    for source, m, unit, direction in rows:
        spec = lookup(m)
        assert spec is not None, f"{source}: {m} is not in the registry"
        assert (unit, direction) == (spec.unit, spec.direction), f"{source}: {m}"


def test_decode_benchmark_records_use_the_registry():
    from collectors.bench.decode import DecodeConfig, run

    recs = run(DecodeConfig(device="cpu", tp=1, batch_sizes=[1], trials=2, steps=2, warmup=1,
                            quiet=True))
    for m, v in recs[0]["metrics"].items():
        assert (v["unit"], v["direction"]) == (lookup(m).unit, lookup(m).direction)


def test_migration_rows_are_the_registry(settings):
    eng = create_engine(settings.database_url)
    with eng.connect() as c:
        rows = {r.name: (r.unit, r.direction, r.threshold_pct, bool(r.exact), bool(r.gated))
                for r in c.execute(text("SELECT * FROM metric_registry WHERE builtin"))}
    eng.dispose()
    assert rows == {r["name"]: (r["unit"], r["direction"], r["threshold_pct"], r["exact"], r["gated"])
                    for r in seed_rows()}
    assert set(FIXED) <= set(rows)


def test_vllm_serve_with_e2el_ingests_and_gates_lower_is_better(client):
    recs, _ = ingest([DATA / "engines" / "serve_e2el.json"], benchmark="glm-serve")
    rec = recs[0]
    rec.pop("idempotency_key")  # the file's own key: the runs made from it below are others
    assert rec["metrics"]["e2el_ms_mean"] == {"unit": "ms", "direction": "lower",
                                              "samples": [9120.4]}
    base_ids = []
    for i, f in enumerate((1.0, 1.002, 0.998, 1.001)):
        r = {**rec, "started_at": f"2026-11-0{i + 1}T00:00:00Z", "metrics": {
            k: {**v, "samples": [v["samples"][0] * f]} for k, v in rec["metrics"].items()}}
        res = client.post("/api/v1/runs", json=r)
        assert res.status_code == 201, res.text
        base_ids.append(res.json()["id"])
    client.post("/api/v1/baselines", json={"name": "v17", "benchmark": "glm-serve",
                                           "run_ids": base_ids})
    slow = {**rec, "started_at": "2026-11-09T00:00:00Z", "metrics": {
        "e2el_ms_mean": {**rec["metrics"]["e2el_ms_mean"], "samples": [9120.4 * 1.05] * 3}}}
    cid = client.post("/api/v1/runs", json=slow).json()["id"]
    g = client.post("/api/v1/gate", json={"benchmark": "glm-serve", "baseline": "v17",
                                          "run_ids": [cid]}).json()
    m = g["metrics"][0]
    assert m["name"] == "e2el_ms_mean" and m["direction"] == "lower"
    assert m["delta_pct"] == pytest.approx(5.0, abs=0.2) and m["verdict"] == "regression"
    # the collectors' old copy called it higher-is-better: the service refuses that now
    bad = {**slow, "started_at": "2026-11-10T00:00:00Z",
           "metrics": {"e2el_ms_mean": {"unit": "ms", "direction": "higher", "samples": [1.0]}}}
    r = client.post("/api/v1/runs", json=bad)
    assert r.status_code == 422 and "'lower' is better" in r.json()["error"]["message"]


def test_unknown_metric_needs_a_direction():
    from collectors.record import metric

    with pytest.raises(ValueError, match="give its direction"):
        metric("my_score", [1.0])
    assert metric("my_score", [1.0], "pts", "higher")["direction"] == "higher"
