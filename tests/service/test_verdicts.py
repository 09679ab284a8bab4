"""The gate through the API: a run counts once, varied keys, branch-aware history and noise,
and the shared-expert PR's question on real H200 data (data/h200/ab)."""
from __future__ import annotations

import json

import pytest

from tests.conftest import H200, minimal_run


def post(client, run):
    r = client.post("/api/v1/runs", json=run)
    assert r.status_code in (200, 201), r.text
    return r.json()["id"]


def tok(means, spread=0.01, **over):
    """A run of 5 trials around `means` (one run)."""
    m = means
    return minimal_run(metrics={"tok_s": {"samples": [m - 2 * spread, m - spread, m, m + spread,
                                                      m + 2 * spread]}}, **over)


def baseline(client, means, name="v17", **over):
    ids = [post(client, tok(m, started_at=f"2026-11-01T0{i}:00:00Z", **over))
           for i, m in enumerate(means)]
    assert client.post("/api/v1/baselines", json={"name": name, "benchmark": "bench-a",
                                                  "run_ids": ids}).status_code == 201
    return ids


def gate(client, ids, **kw):
    r = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v17",
                                          "run_ids": ids, **kw})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_run_counts_once_however_often_posted(client):
    baseline(client, [100.0, 100.4, 99.6, 100.2])
    cand = tok(99.7, started_at="2026-11-02T00:00:00Z")
    first = post(client, cand)
    once = gate(client, [first])
    again = [post(client, {**cand, "idempotency_key": f"ci-retry-{i}"}) for i in range(2)]
    assert len({first, *again}) == 3  # stored three times (different keys) ...
    thrice = gate(client, [first, *again])
    assert thrice["candidate_run_ids"] == [first]  # ... but one run in every statistic
    m1, m3 = once["metrics"][0], thrice["metrics"][0]
    assert m3["candidate"]["runs"] == 1 and m3["verdict"] == m1["verdict"]
    assert m3["p_value"] == pytest.approx(m1["p_value"]) and m3["method"] == m1["method"]
    # a baseline holding a repeated record counts it once too
    dup = post(client, {**tok(100.0, started_at="2026-11-01T00:00:00Z"), "idempotency_key": "x"})
    client.put("/api/v1/baselines/bench-a/v17", json={"run_ids": [
        *gate(client, [first])["baseline_run_ids"], dup]})
    assert gate(client, [first])["metrics"][0]["baseline"]["runs"] == 4


def test_estimator_fields_and_pass_rule(client):
    baseline(client, [100.0, 103.0, 97.0, 102.0, 98.0])  # +-3%
    g = gate(client, [post(client, tok(99.8, started_at="2026-11-03T00:00:00Z"))])
    m = g["metrics"][0]
    assert g["verdict"] == "inconclusive" and m["verdict"] == "inconclusive"
    assert m["delta_pct"] == pytest.approx(-0.2, abs=1e-6)
    assert m["ci_low_pct"] < m["bound_pct"] < m["delta_pct"] < m["ci_high_pct"]
    assert m["candidate"]["mean"] == pytest.approx(99.8)


def test_vary_matches_across_a_changed_key(client):
    baseline(client, [100.0, 100.02, 99.98], config={"tp": 1, "batch_size": 1,
                                                      "shared_experts": "overlap"})
    late = post(client, tok(99.0, config={"tp": 1, "batch_size": 1, "shared_experts": "late"},
                            started_at="2026-11-04T00:00:00Z"))
    g = gate(client, [late])
    assert g["verdict"] == "inconclusive" and "no baseline run in this series" in g["metrics"][0]["reason"]
    g = gate(client, [late], vary=["shared_experts"])
    m = g["metrics"][0]
    assert g["verdict"] == "fail" and m["verdict"] == "regression" and g["vary"] == ["shared_experts"]
    assert m["series"]["shared_experts"] == {"baseline": "overlap", "candidate": "late"}
    for key in ("gpu", "gpu_count"):
        r = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v17",
                                              "run_ids": [late], "vary": [key]})
        assert r.status_code == 422 and "can never be varied" in r.json()["error"]["message"]
    cmp = client.get("/api/v1/compare", params={"benchmark": "bench-a", "baseline": "v17",
                                                "run_ids": str(late), "vary": "shared_experts"}).json()
    assert cmp["metrics"][0]["series"]["shared_experts"]["candidate"] == "late"
    assert [d["run_id"] for d in cmp["distributions"][0]["candidate"]] == [late]
    assert len(cmp["distributions"][0]["baseline"]) == 3


def test_h200_late_vs_overlap_interleaved(client):
    """The shared-expert PR's question on one H200 (bench/gpu/h200_ab.sh): the PR's `late`
    shared-expert
    order against v17's `overlap`, CUDA graphs, 6 ABBA blocks of separate processes."""
    ids: dict[str, list[int]] = {"v17-overlap": [], "pr-late": []}
    for f in sorted((H200 / "ab").glob("*.json")):
        for rec in json.loads(f.read_text()):
            ids[rec["label"]].append(post(client, rec))
    assert client.post("/api/v1/baselines", json={"name": "v17", "benchmark": "moe-decode-ab",
                                                  "run_ids": ids["v17-overlap"]}).status_code == 201
    body = {"benchmark": "moe-decode-ab", "baseline": "v17", "run_ids": ids["pr-late"],
            "metrics": ["tok_s"]}
    g = client.post("/api/v1/gate", json=body).json()
    assert g["verdict"] == "inconclusive"
    assert {m["reason"].split(" (")[0] for m in g["metrics"]} == {"no baseline run in this series"}
    g = client.post("/api/v1/gate", json={**body, "vary": ["shared_experts"]}).json()
    by_m = {m["series"]["batch_size"]: m for m in g["metrics"]}
    assert set(by_m) == {1, 8}
    m1, m8 = by_m[1], by_m[8]
    assert m1["series"]["shared_experts"] == {"baseline": "overlap", "candidate": "late"}
    assert m1["baseline"]["runs"] == 6 and m1["candidate"]["runs"] == 6
    # measured: late costs 0.59% at M=1 (past the 0.5% threshold), 0.12% at M=8 (within it)
    assert m1["delta_pct"] == pytest.approx(-0.594, abs=0.02) and m1["verdict"] == "regression"
    assert m8["delta_pct"] == pytest.approx(-0.122, abs=0.02) and m8["verdict"] == "pass"
    assert m8["bound_pct"] > -0.5
    assert g["verdict"] == "fail"


def test_history_noise_and_change_points_read_one_branch(client):
    # main: flat at 100 then a 3% step; a PR and a feature branch run far lower in between
    for i, v in enumerate([100.0] * 8 + [97.0] * 8):
        post(client, tok(v, spread=0.05, started_at=f"2026-11-01T{i:02d}:00:00Z", branch="main"))
    for i in range(3):
        post(client, tok(80.0, started_at=f"2026-11-01T0{i}:30:00Z", branch="fix/moe", pr=150))
        post(client, tok(85.0, started_at=f"2026-11-01T0{i}:45:00Z", branch="feature"))
    cp = client.get("/api/v1/changepoints?benchmark=bench-a").json()
    assert cp["branch"] == "main"
    pts = cp["series"][0]["change_points"]
    assert len(pts) == 1 and pts[0]["index"] == 8 and pts[0]["delta_pct"] == pytest.approx(-3.0)
    nz = client.get("/api/v1/noise?benchmark=bench-a").json()["series"][0]
    assert nz["runs"] == 16
    feat = client.get("/api/v1/noise?benchmark=bench-a&branch=feature").json()
    assert feat["branch"] == "feature" and feat["series"][0]["runs"] == 3
    # the benchmark's default branch is configurable
    r = client.patch("/api/v1/benchmarks/bench-a", json={"default_branch": "feature"})
    assert r.status_code == 200 and r.json()["default_branch"] == "feature"
    assert client.get("/api/v1/noise?benchmark=bench-a").json()["series"][0]["runs"] == 3
    assert client.patch("/api/v1/benchmarks/nope", json={"default_branch": "x"}).status_code == 404


def test_noise_of_a_baseline(client):
    ids = baseline(client, [100.0, 101.0, 99.0])
    post(client, tok(50.0, started_at="2026-11-05T00:00:00Z"))
    nz = client.get("/api/v1/noise?benchmark=bench-a&baseline=v17").json()
    assert nz["baseline"] == "v17" and nz["branch"] is None
    row = nz["series"][0]
    assert row["runs"] == len(ids) and row["run_to_run_cv_pct"] == pytest.approx(1.0)
    assert client.get("/api/v1/noise?benchmark=bench-a&baseline=nope").status_code == 404


def test_openapi_describes_results(client):
    doc = client.get("/openapi.json").json()
    paths = doc["paths"]
    for path, name in (("/api/v1/compare", "CompareOut"), ("/api/v1/noise", "NoiseOut"),
                       ("/api/v1/changepoints", "ChangePointsOut"), ("/api/v1/gate", "GateOut")):
        op = paths[path]["get" if path != "/api/v1/gate" else "post"]
        ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/" + name)
    assert "bound_pct" in doc["components"]["schemas"]["MetricVerdict"]["properties"]
    assert "/api/v1/baselines/{benchmark}/{name}" in paths
    assert {"get", "put", "delete"} <= set(paths["/api/v1/baselines/{benchmark}/{name}"])


def _refused(client, ids, **kw):
    r = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v17",
                                          "run_ids": ids, **kw})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert "\n" not in err["message"] and err["code"] == "identity_differs"
    return err["message"]


def test_runs_of_differing_identity_are_refused_unless_varied(client):
    """A baseline of one model and TP size against runs of another: refused with one line
    naming the key and both values, nothing judged, unless the request varies the key; a key
    one side does not know is no difference, and a GPU-count sweep is matched cell by cell."""
    cfg = {"model": "Qwen/Qwen3-8B", "tp": 2, "batch_size": 1}
    base = baseline(client, [100.0, 100.02, 99.98], config=cfg)
    other_model = post(client, tok(99.0, config={**cfg, "model": "meta-llama/Llama-3.1-8B"},
                                   started_at="2026-11-04T00:00:00Z"))
    msg = _refused(client, [other_model])
    assert msg == (f"model: baseline run {base[0]} has model='Qwen/Qwen3-8B' and candidate run "
                   f"{other_model} has model='meta-llama/Llama-3.1-8B': runs of differing model "
                   "are not pooled (name it with --vary to compare across it)")
    g = gate(client, [other_model], vary=["model"])
    assert g["metrics"][0]["series"]["model"] == {"baseline": "Qwen/Qwen3-8B",
                                                   "candidate": "meta-llama/Llama-3.1-8B"}
    tp4 = post(client, tok(99.0, config={**cfg, "tp": 4}, started_at="2026-11-04T01:00:00Z"))
    assert _refused(client, [tp4]).startswith(f"tp: baseline run {base[0]} has tp=2 and "
                                              f"candidate run {tp4} has tp=4")
    kv = post(client, tok(99.0, config={**cfg, "kv_cache_dtype": "fp8_e4m3"},
                          started_at="2026-11-04T02:00:00Z"))  # the baseline names no KV dtype
    g = gate(client, [kv])
    assert g["verdict"] == "inconclusive" and "no kv_cache_dtype" in g["metrics"][0]["reason"]
    # a candidate set that holds the baseline's model too: each series on its own, not refused
    same = post(client, tok(100.0, config=cfg, started_at="2026-11-04T03:00:00Z"))
    g = gate(client, [same, other_model])
    assert len(g["metrics"]) == 2 and g["metrics"][0]["verdict"] == "pass"
    h100 = post(client, tok(100.0, config=cfg, hardware={"gpu": "NVIDIA H100", "gpu_count": 1},
                            started_at="2026-11-04T04:00:00Z"))
    assert _refused(client, [h100]).startswith("gpu: ")
    assert "can never be varied" in client.post("/api/v1/gate", json={
        "benchmark": "bench-a", "baseline": "v17", "run_ids": [h100], "vary": ["gpu"]}).text


def test_experiment_arms_of_differing_identity_are_refused_unless_varied(client):
    """An experiment whose arms ran two TP sizes: its verdict is refused naming tp, unless the
    request varies tp; arms that differ in a setting (the shared-expert order) are judged."""
    runs = []
    for block in range(3):
        for arm, tp in (("baseline", 2), ("candidate", 4)):
            runs.append(post(client, tok(100.0 if arm == "baseline" else 99.9, config={
                "tp": tp, "batch_size": 1}, started_at=f"2026-11-05T0{block}:{len(runs):02d}:00Z",
                experiment={"id": "tp-exp", "arm": arm, "block": block, "looks": 1})))
    r = client.post("/api/v1/gate", json={"experiment": "tp-exp"})
    assert r.status_code == 422 and r.json()["error"]["message"].startswith(
        f"tp: baseline arm run {runs[0]} has tp=2 and candidate arm run {runs[1]} has tp=4"), r.text
    r = client.post("/api/v1/gate", json={"experiment": "tp-exp", "vary": ["tp"]})
    assert r.status_code == 200 and r.json()["vary"] == ["tp"], r.text
