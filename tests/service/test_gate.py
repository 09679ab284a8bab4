"""The gate on real H200 noise data: A/A passes, planted ~1% and ~3% slowdowns fail."""
from __future__ import annotations

import pytest

from tests.conftest import h200_records, minimal_run


def _load(client, part):
    ids = {}
    for r in h200_records("noise", part):
        rid = client.post("/api/v1/runs", json=r).json()["id"]
        ids.setdefault(r["label"].split("-")[0], []).append(rid)
    return ids


def _gate(client, ids, **kw):
    body = {"benchmark": "moe-decode-noise", "baseline": "v1", "run_ids": ids, **kw}
    r = client.post("/api/v1/gate", json=body)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def graphs(client):
    ids = _load(client, "graphs")
    r = client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                                "run_ids": ids["aa"][:4]})
    assert r.status_code == 201
    return ids


def test_aa_block_passes(client, graphs):
    g = _gate(client, [graphs["aa"][4]])
    assert g["verdict"] == "pass"
    tok = next(m for m in g["metrics"] if m["name"] == "tok_s")
    assert abs(tok["delta_pct"]) < 0.1 and tok["verdict"] == "pass"
    assert g["baseline_run_ids"] == sorted(graphs["aa"][:4])


@pytest.mark.parametrize("kind,lo,hi", [("plant1", -1.6, -1.0), ("plant3", -3.4, -2.8)])
def test_planted_slowdowns_fail_single_run(client, graphs, kind, lo, hi):
    for rid in graphs[kind]:
        g = _gate(client, [rid])
        tok = next(m for m in g["metrics"] if m["name"] == "tok_s")
        assert g["verdict"] == "fail" and tok["verdict"] == "regression"
        assert lo < tok["delta_pct"] < hi
        assert tok["ci_low_pct"] < tok["delta_pct"] < tok["ci_high_pct"]
        assert tok["method"].startswith("prediction interval")


def test_pooled_candidates_and_determinism_of_answer(client, graphs):
    a = _gate(client, graphs["plant1"])
    b = _gate(client, graphs["plant1"])
    assert a == b
    tok = next(m for m in a["metrics"] if m["name"] == "tok_s")
    assert tok["candidate"]["runs"] == 5 and tok["candidate"]["n"] == 25
    assert tok["method"].startswith("Welch t-test on log run means")


def test_threshold_override_makes_small_change_pass(client, graphs):
    g = _gate(client, [graphs["plant1"][0]], thresholds={"tok_s": 2.0})
    assert g["verdict"] == "pass"


def test_eager_noise_is_honest(client):
    """Eager decode on this VM swings by ~10% between processes: a 1% plant cannot be told from
    noise, and the gate must not call it a regression."""
    ids = _load(client, "eager")
    client.post("/api/v1/baselines", json={"name": "v1", "benchmark": "moe-decode-noise",
                                           "run_ids": ids["aa"][:4]})
    for rid in ids["plant1"]:
        tok = next(m for m in _gate(client, [rid])["metrics"] if m["name"] == "tok_s")
        assert tok["verdict"] in ("pass", "inconclusive", "improvement")


def test_seed_case_numbers(client):
    """The shared-expert PR: v17 mean 87.745; a -0.93% ordering is a regression, -0.12% is within
    noise."""
    v17 = [[87.70, 87.75, 87.79, 87.74, 87.74], [87.71, 87.80, 87.76, 87.72, 87.73],
           [87.69, 87.78, 87.75, 87.77, 87.72], [87.76, 87.74, 87.70, 87.79, 87.75]]
    ids = [client.post("/api/v1/runs", json=minimal_run(benchmark="glm", metrics={
        "tok_s": {"samples": s}})).json()["id"] for s in v17]
    client.post("/api/v1/baselines", json={"name": "v17", "benchmark": "glm", "run_ids": ids})
    bad = client.post("/api/v1/runs", json=minimal_run(benchmark="glm", metrics={"tok_s": {
        "samples": [86.90, 86.95, 86.93, 86.92, 86.94]}})).json()["id"]
    good = client.post("/api/v1/runs", json=minimal_run(benchmark="glm", metrics={"tok_s": {
        "samples": [87.62, 87.66, 87.643, 87.60, 87.65]}})).json()["id"]
    g = client.post("/api/v1/gate", json={"benchmark": "glm", "baseline": "v17", "run_ids": [bad]}).json()
    assert g["verdict"] == "fail" and g["metrics"][0]["delta_pct"] == pytest.approx(-0.93, abs=0.02)
    g = client.post("/api/v1/gate", json={"benchmark": "glm", "baseline": "v17", "run_ids": [good]}).json()
    assert g["verdict"] == "pass" and g["metrics"][0]["delta_pct"] == pytest.approx(-0.12, abs=0.01)


def test_inconclusive_cases(client):
    base = client.post("/api/v1/runs", json=minimal_run(metrics={"tok_s": {"samples": [100, 101]}})).json()["id"]
    client.post("/api/v1/baselines", json={"name": "b", "benchmark": "bench-a", "run_ids": [base]})
    cand = client.post("/api/v1/runs", json=minimal_run()).json()["id"]
    g = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "b", "run_ids": [cand]}).json()
    assert g["verdict"] == "inconclusive" and "fewer than three samples" in g["metrics"][0]["reason"]
    other = client.post("/api/v1/runs", json=minimal_run(hardware={"gpu": "NVIDIA H100", "gpu_count": 1})).json()["id"]
    r = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "b", "run_ids": [other]})
    assert r.status_code == 422 and r.json()["error"]["message"] == (
        f"gpu: baseline run {base} has gpu='NVIDIA H200' and candidate run {other} has "
        "gpu='NVIDIA H100': runs of differing gpu are not pooled (they are never compared)")


def test_kv_capacity_compares_exactly(client):
    n = iter(range(100))  # distinct start times: identical records would count as one run
    mk = lambda kv: minimal_run(metrics={"kv_capacity_tokens": {"samples": [kv]},  # noqa: E731
                                         "tok_s": {"samples": [100, 100.1, 99.9]}},
                                started_at=f"2026-11-01T00:{next(n):02d}:00Z")
    ids = [client.post("/api/v1/runs", json=mk(578368)).json()["id"] for _ in range(3)]
    client.post("/api/v1/baselines", json={"name": "v", "benchmark": "bench-a", "run_ids": ids})
    same = client.post("/api/v1/runs", json=mk(578368)).json()["id"]
    grain = client.post("/api/v1/runs", json=mk(578352)).json()["id"]  # 16 tokens: a block
    drop = client.post("/api/v1/runs", json=mk(577344)).json()["id"]  # 1,024 tokens: 0.18%
    g = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v", "run_ids": [same]}).json()
    kv = next(m for m in g["metrics"] if m["name"] == "kv_capacity_tokens")
    assert kv["verdict"] == "pass" and "unchanged at 578,368" in kv["reason"]
    g = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v", "run_ids": [grain]}).json()
    kv = next(m for m in g["metrics"] if m["name"] == "kv_capacity_tokens")
    assert kv["verdict"] == "pass" and "within 0.1% of it" in kv["reason"]
    g = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v", "run_ids": [drop]}).json()
    kv = next(m for m in g["metrics"] if m["name"] == "kv_capacity_tokens")
    assert g["verdict"] == "fail" and kv["verdict"] == "regression" and "-1,024" in kv["reason"]


def test_baseline_references_are_explicit_and_moves_keep_history(client):
    a = [client.post("/api/v1/runs", json=minimal_run(label="v17", commit="deadbeef1",
                                                      started_at=f"2026-11-01T0{i}:00:00Z")).json()["id"]
         for i in range(3)]
    c = client.post("/api/v1/runs", json=minimal_run(label="pr-150")).json()["id"]

    def gate(ref):
        return client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": ref,
                                                 "run_ids": [c]})

    assert gate("label:v17").json()["baseline_run_ids"] == a
    assert gate("commit:deadbeef").json()["baseline_run_ids"] == a
    assert gate(f"runs:{a[0]},{a[2]}").json()["baseline_run_ids"] == [a[0], a[2]]
    # a plain string is a name and nothing else: never a silent fall-back to a label or commit
    for ref in ("v17", "pr-150", "deadbeef", "nope"):
        r = gate(ref)
        assert r.status_code == 404 and r.json()["error"]["field"] == "baseline", ref
    assert gate("commit:dead").status_code == 422  # shorter than 7
    assert gate("label:nope").status_code == 404
    assert gate("runs:999999").status_code == 404
    assert client.post("/api/v1/baselines", json={"name": "rel", "benchmark": "bench-a", "run_ids": a[:2]}).status_code == 201
    assert gate("rel").json()["baseline_run_ids"] == a[:2]
    assert client.post("/api/v1/baselines", json={"name": "rel", "benchmark": "bench-a", "run_ids": a}).status_code == 409
    assert client.post("/api/v1/baselines", json={"name": "x", "benchmark": "bench-a", "run_ids": [9999]}).status_code == 422
    moved = client.put("/api/v1/baselines/bench-a/rel", json={"run_ids": [a[2]]}).json()
    assert moved["run_ids"] == [a[2]] and moved["history"][0]["run_ids"] == a[:2]
    assert client.get("/api/v1/baselines?benchmark=bench-a").json()["count"] == 1
    one = client.get("/api/v1/baselines/bench-a/rel")
    assert one.status_code == 200 and one.json()["run_ids"] == [a[2]]
    assert client.delete("/api/v1/baselines/bench-a/rel").status_code == 204
    assert client.get("/api/v1/baselines/bench-a/rel").status_code == 404
    assert client.delete("/api/v1/baselines/bench-a/rel").status_code == 404
    assert gate("rel").status_code == 404


def test_changepoints_and_noise(client):
    vals = [100.0] * 8 + [97.0] * 8
    for i, v in enumerate(vals):
        client.post("/api/v1/runs", json=minimal_run(started_at=f"2026-11-01T{i:02d}:00:00Z",
                                                     metrics={"tok_s": {"samples": [v - 0.05, v, v + 0.05]}}))
    cp = client.get("/api/v1/changepoints?benchmark=bench-a").json()["series"][0]["change_points"]
    assert len(cp) == 1 and cp[0]["index"] == 8 and cp[0]["delta_pct"] == pytest.approx(-3.0)
    nz = client.get("/api/v1/noise?benchmark=bench-a").json()["series"][0]
    assert nz["runs"] == 16 and nz["trial_cv_pct"] == pytest.approx(0.05 / 98.5 * 100, rel=0.05)


def test_exact_metric_compares_each_candidate_run_with_the_baselines_typical_value(client):
    """KV capacity: a baseline of 500,000, 578,368, 578,368 has a typical 578,368; a candidate
    run at 520,000 is a drop, however it compares with the baseline's worst run."""
    n = iter(range(100))
    mk = lambda kv: minimal_run(metrics={"kv_capacity_tokens": {"samples": [kv]},  # noqa: E731
                                         "tok_s": {"samples": [100, 100.1, 99.9]}},
                                started_at=f"2026-11-02T00:{next(n):02d}:00Z")
    ids = [client.post("/api/v1/runs", json=mk(kv)).json()["id"] for kv in (500000, 578368, 578368)]
    client.post("/api/v1/baselines", json={"name": "v", "benchmark": "bench-a", "run_ids": ids})
    low = client.post("/api/v1/runs", json=mk(520000)).json()["id"]
    same = client.post("/api/v1/runs", json=mk(578368)).json()["id"]
    g = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v",
                                          "run_ids": [low, same]}).json()
    kv = next(m for m in g["metrics"] if m["name"] == "kv_capacity_tokens")
    assert g["verdict"] == "fail" and kv["verdict"] == "regression", kv
    assert f"run {low} at 520,000" in kv["reason"] and f"run {same}" not in kv["reason"]
    assert "typical 578,368" in kv["reason"] and "1 of 2 candidate runs" in kv["reason"]
    assert kv["delta_pct"] == pytest.approx(100 * (520000 - 578368) / 578368)
    g = client.post("/api/v1/gate", json={"benchmark": "bench-a", "baseline": "v",
                                          "run_ids": [same]}).json()
    kv = next(m for m in g["metrics"] if m["name"] == "kv_capacity_tokens")
    assert kv["verdict"] == "pass" and "unchanged at 578,368" in kv["reason"]


def test_a_bad_threshold_reads_the_same_from_the_api_and_the_cli(client):
    from collectors.errors import CliError
    from collectors.options import thresholds

    r = client.get("/api/v1/compare", params={"benchmark": "b", "baseline": "v17", "run_ids": "1",
                                              "thresholds": "tok_s=2,ttft_ms=fast"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "thresholds"
    assert r.json()["error"]["message"] == "thresholds: 'ttft_ms=fast': expected METRIC=PERCENT"
    with pytest.raises(CliError, match="--threshold 'ttft_ms=fast': expected METRIC=PERCENT"):
        thresholds(["tok_s=2", "ttft_ms=fast"])
