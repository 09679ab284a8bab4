"""Experiments through the API: tagged runs, the blocked verdict (`POST /api/v1/gate
{"experiment": ID}`), the runs by arm and block (`GET /api/v1/experiments/{id}`)."""
from __future__ import annotations

import pytest

from collectors.experiment import block_order
from tests.conftest import minimal_run


def post_experiment(client, exp_id, cand_factor, blocks=6, noise=0.0005, drift=0.02, looks=None,
                    question=None):
    ids = {"baseline": [], "candidate": []}
    for b in range(blocks):
        f = 1.0 + drift * ((b * 7) % 5 - 2) / 2  # the machine drifts from block to block
        for j, arm in enumerate(block_order(b)):
            level = 1000.0 * f * (cand_factor if arm == "candidate" else 1.0)
            samples = [level * (1 + noise * ((b + j + k) % 3 - 1)) for k in range(5)]
            run = minimal_run(benchmark="ab", label=f"{exp_id}-{arm}",
                              config={"tp": 1, "batch_size": 1,
                                      "shared_experts": "late" if arm == "candidate" else "overlap"},
                              started_at=f"2026-11-0{1 + b // 4}T{(b % 4) * 2 + j:02d}:00:00Z",
                              experiment={"id": exp_id, "arm": arm, "block": b,
                                          **({"looks": looks} if looks else {}),
                                          **(question or {})},
                              metrics={"tok_s": {"samples": samples}})
            r = client.post("/api/v1/runs", json=run)
            assert r.status_code == 201, r.text
            ids[arm].append(r.json()["id"])
    return ids


def gate(client, exp_id, **kw):
    r = client.post("/api/v1/gate", json={"experiment": exp_id, **kw})
    assert r.status_code == 200, r.text
    return r.json()


def test_blocked_verdicts_cancel_drift(client):
    post_experiment(client, "slow", 0.99)
    g = gate(client, "slow")
    m = g["metrics"][0]
    assert g["verdict"] == "fail" and m["verdict"] == "regression"
    assert m["delta_pct"] == pytest.approx(-1.0, abs=0.05)
    assert m["method"].startswith("blocked: 6 interleaved block(s)")
    assert g["vary"] == ["shared_experts"]  # the key the arms set apart, found by itself
    assert m["series"]["shared_experts"] == {"baseline": "overlap", "candidate": "late"}
    post_experiment(client, "aa", 1.0)
    g = gate(client, "aa")
    assert g["verdict"] == "pass" and abs(g["metrics"][0]["delta_pct"]) < 0.05
    # the runs of one experiment are found by its id
    runs = client.get("/api/v1/runs", params={"experiment": "aa", "limit": 100}).json()["data"]
    assert len(runs) == 12


def test_sequential_looks_and_show(client):
    ids = post_experiment(client, "seq", 0.999, blocks=4)
    one, eight = gate(client, "seq"), gate(client, "seq", max_looks=8)
    assert eight["alpha"] == one["alpha"] == 0.05 and (one["looks"], eight["looks"]) == (1, 8)
    assert eight["metrics"][0]["ci_low_pct"] < one["metrics"][0]["ci_low_pct"]
    assert "99.38% CI" in eight["metrics"][0]["reason"]  # the level in use: 1 - 0.05/8
    shown = client.get("/api/v1/experiments/seq").json()
    assert [b["order"] for b in shown["blocks"]] == [
        ["baseline", "candidate"], ["candidate", "baseline"], ["candidate", "baseline"],
        ["baseline", "candidate"]]
    assert shown["blocks"][1]["candidate"][0]["run_id"] == ids["candidate"][1]
    # block 0 runs at a 0.98 drift; its trial offsets (-1, 0, 1, -1, 0) x 0.05% average -0.01%
    assert shown["blocks"][0]["baseline"][0]["tok_s_mean"] == pytest.approx(980.0 * (1 - 0.0001))
    assert shown["verdict"]["baseline"] == "experiment:seq"
    assert client.get("/api/v1/experiments/nope").status_code == 404


def test_stored_looks_win_for_every_asker(client):
    """spec/api.md, One experiment one answer: the looks are stored with the runs, so the gate
    (asked with or without
    max_looks) and GET /experiments/{id} judge at alpha/looks alike."""
    post_experiment(client, "planned", 0.999, blocks=4, looks=5)
    plain, asked = gate(client, "planned"), gate(client, "planned", max_looks=2)
    shown = client.get("/api/v1/experiments/planned").json()["verdict"]
    for g in (plain, asked, shown):
        assert g["looks"] == 5 and g["alpha"] == 0.05
        m = g["metrics"][0]
        assert (m["verdict"], m["ci_low_pct"], m["ci_high_pct"]) == (
            plain["metrics"][0]["verdict"], plain["metrics"][0]["ci_low_pct"],
            plain["metrics"][0]["ci_high_pct"])
    run = client.get("/api/v1/runs", params={"experiment": "planned", "limit": 1}).json()["data"][0]
    assert run["experiment"]["looks"] == 5


def test_the_looks_are_the_stored_plans_not_the_largest_tag(client):
    """The plan is stored with an experiment's first run: a later record naming more looks is
    refused (422, one line, nothing of its batch stored), a record naming none joins, and every
    asker judges at the plan's looks, whatever a client tagged or a request asks."""
    post_experiment(client, "plan3", 0.999, blocks=2, looks=3)
    late = minimal_run(benchmark="ab", config={"tp": 1, "batch_size": 1, "shared_experts": "late"},
                       started_at="2026-11-09T00:00:00Z",
                       experiment={"id": "plan3", "arm": "candidate", "block": 9, "looks": 40})
    before = client.get("/api/v1/runs", params={"experiment": "plan3"}).json()["count"]
    r = client.post("/api/v1/runs/batch", json={"runs": [
        {**late, "experiment": {**late["experiment"], "looks": 3}, "started_at": "2026-11-09T01:00:00Z"},
        late]})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["message"] == ("runs[1].experiment.looks: experiment 'plan3' was "
                                            "planned with 3 looks (its first run); this record "
                                            "says 40")
    assert client.get("/api/v1/runs", params={"experiment": "plan3"}).json()["count"] == before
    untagged = {**late, "experiment": {"id": "plan3", "arm": "candidate", "block": 9}}
    assert client.post("/api/v1/runs", json=untagged).status_code == 201
    for g in (gate(client, "plan3"), gate(client, "plan3", max_looks=40),
              client.get("/api/v1/experiments/plan3").json()["verdict"]):
        assert g["looks"] == 3 and "each of 3 looks at alpha/3" in g["correction"], g
    # an experiment whose first run named no looks is judged at the request's
    post_experiment(client, "unplanned", 0.999, blocks=2)
    assert gate(client, "unplanned", max_looks=4)["looks"] == 4


def test_the_question_the_runner_asked_is_the_plan_every_asker_gets(client):
    """The metrics, thresholds and vary the runner asked (`--metric`, `--threshold`, `--vary`)
    are stored with the plan: the gate without them, the experiment's view and a later ask all
    judge that question; a request naming its own is answered as asked; a later record asking
    another is refused (422, one line, nothing of its batch stored)."""
    asked = {"metrics": ["tok_s"], "thresholds": {"tok_s": 5.0}}
    post_experiment(client, "q5", 0.99, blocks=4, question=asked)  # -1%, within the 5% asked
    plain = gate(client, "q5")
    shown = client.get("/api/v1/experiments/q5").json()["verdict"]
    for g in (plain, shown):
        assert g["verdict"] == "pass" and [m["name"] for m in g["metrics"]] == ["tok_s"], g
        assert g["metrics"][0]["threshold_pct"] == 5.0
    own = gate(client, "q5", thresholds={"tok_s": 0.5})
    assert own["verdict"] == "fail" and own["metrics"][0]["threshold_pct"] == 0.5
    # the same runs without a stored question: the registry's threshold, a regression
    post_experiment(client, "q-none", 0.99, blocks=4)
    assert gate(client, "q-none")["verdict"] == "fail"
    late = minimal_run(benchmark="ab", config={"tp": 1, "batch_size": 1, "shared_experts": "late"},
                       started_at="2026-11-09T00:00:00Z",
                       experiment={"id": "q5", "arm": "candidate", "block": 9,
                                   "metrics": ["tok_s"], "thresholds": {"tok_s": 10.0}})
    before = client.get("/api/v1/runs", params={"experiment": "q5"}).json()["count"]
    r = client.post("/api/v1/runs/batch", json={"runs": [
        {**late, "experiment": {**late["experiment"], **asked}, "started_at": "2026-11-09T01:00:00Z"},
        late]})
    assert r.status_code == 422 and r.json()["error"]["code"] == "plan_differs", r.text
    message = r.json()["error"]["message"]
    assert message.startswith("runs[1].experiment: experiment 'q5' was asked metrics ['tok_s']; "
                              "thresholds {'tok_s': 5.0} (its first run); this record asks ")
    assert "\n" not in message
    assert client.get("/api/v1/runs", params={"experiment": "q5"}).json()["count"] == before
    untagged = {**late, "experiment": {"id": "q5", "arm": "candidate", "block": 9}}
    assert client.post("/api/v1/runs", json=untagged).status_code == 201
    # the same question, its names repeated: the same plan, each metric judged once
    again = {**late, "experiment": {"id": "q5", "arm": "baseline", "block": 9,
                                    "metrics": ["tok_s", "tok_s"], "thresholds": {"tok_s": 5.0}}}
    assert client.post("/api/v1/runs", json=again).status_code == 201
    assert [m["threshold_pct"] for m in gate(client, "q5")["metrics"]] == [5.0]
    bad = {**late, "experiment": {"id": "q6", "arm": "candidate", "block": 0, "vary": ["gpu"]}}
    assert client.post("/api/v1/runs", json=bad).status_code == 422


def test_gate_request_is_one_or_the_other(client):
    for body in ({"experiment": "x", "baseline": "v17"}, {"benchmark": "b", "baseline": "v"},
                 {"experiment": "x", "run_ids": [1]}):
        r = client.post("/api/v1/gate", json=body)
        assert r.status_code == 422, body
    assert client.post("/api/v1/gate", json={"experiment": "none"}).status_code == 404


def test_h200_experiments(client):
    """`perfwarden experiment` on one H200 (bench/gpu/h200_experiment.sh, data/h200/experiment):
    6 interleaved blocks each, CUDA graphs."""
    import json

    from tests.conftest import H200

    for name in ("late-vs-overlap", "plant1"):
        recs = json.loads((H200 / "experiment" / f"{name}.json").read_text())
        assert client.post("/api/v1/runs/batch", json={"runs": recs}).status_code == 201
    g = gate(client, "late-vs-overlap", metrics=["tok_s"])
    by_m = {m["series"]["batch_size"]: m for m in g["metrics"]}
    assert g["vary"] == ["shared_experts"] and g["verdict"] == "pass"
    # measured on this host: late costs 0.14% at M=1 and 0.19% at M=8, both ruled out as 0.5%
    assert by_m[1]["delta_pct"] == pytest.approx(-0.136, abs=0.01)
    assert by_m[8]["delta_pct"] == pytest.approx(-0.193, abs=0.01)
    assert all(m["verdict"] == "pass" and m["bound_pct"] > -0.5 for m in by_m.values())
    # the replay with one profiled run per arm (spec/api.md, Gating and evidence metrics): the aux
    # figures of the H200 nsys
    # passes (resident/nsys) ride on block 0's M=1 run of each arm, one sample a side
    prof = {arm: json.loads((H200 / "resident" / "nsys" / f"{se}-graphs.json").read_text())[0]
            for arm, se in (("baseline", "overlap"), ("candidate", "late"))}
    recs = json.loads((H200 / "experiment" / "late-vs-overlap.json").read_text())
    for r in recs:
        r["experiment"]["id"] = "profiled"
        r.pop("idempotency_key", None)
        if r["experiment"]["block"] == 0 and r["config"]["batch_size"] == 1:
            arm = r["experiment"]["arm"]
            r["metrics"].update({k: v for k, v in prof[arm]["metrics"].items()
                                 if k.startswith("aux_")})
    assert client.post("/api/v1/runs/batch", json={"runs": recs}).status_code == 201
    g = gate(client, "profiled", vary=["shared_experts"])
    assert g["verdict"] == "pass"
    gating = [m for m in g["metrics"] if m["role"] == "gate"]
    evidence = [m for m in g["metrics"] if m["role"] == "evidence"]
    assert {m["name"] for m in gating} == {"tok_s", "kv_capacity_tokens"}
    assert all(m["verdict"] == "pass" for m in gating)
    assert {m["name"] for m in evidence} == {"aux_gap_mean_us", "aux_idle_per_step_us"}
    assert all(m["verdict"] == "inconclusive" and m["ci_low_pct"] is None
               and m["delta_pct"] is not None for m in evidence)
    g = gate(client, "plant1", metrics=["tok_s"])
    m = g["metrics"][0]
    assert g["verdict"] == "fail" and m["verdict"] == "regression"
    assert m["delta_pct"] == pytest.approx(-1.357, abs=0.01) and m["ci_high_pct"] < -1.0
    shown = client.get("/api/v1/experiments/plant1").json()
    assert [b["order"][0] for b in shown["blocks"]] == ["baseline", "candidate", "candidate",
                                                          "baseline", "candidate", "baseline"]


def test_attribution_on_the_h200_matrix(client):
    """The shared-expert PR's matrix on an H200 (bench/gpu/h200_seed_matrix.sh, data/h200/matrix):
    M=1/4/7/8
    x overlap/late/serial x graphs/eager, 5 repeats each. Non-identical repeats follow the batch
    size; the shared-expert order and CUDA graphs explain none of it."""
    import json

    from tests.conftest import H200

    recs = json.loads((H200 / "matrix" / "matrix.json").read_text())
    assert client.post("/api/v1/runs/batch", json={"runs": recs}).status_code == 201
    det = client.get("/api/v1/attribution", params={"benchmark": "moe-decode-matrix",
                                                    "metric": "determinism"}).json()
    assert det["runs"] == 24 and [f["key"] for f in det["factors"]][0] == "batch_size"
    by = {f["key"]: f for f in det["factors"]}
    # runs are the unit (24 run shares, the reference repeat left out): measured p=2e-11
    assert by["batch_size"]["explains"] > 0.9 and by["batch_size"]["p_value"] < 1e-9
    assert by["batch_size"]["level_values"]["1"] == 1.0  # M=1 repeats are all identical
    assert by["batch_size"]["level_values"]["8"] == 0.0  # no M=8 repeat matches its reference
    assert by["shared_experts"]["explains"] < 0.05 and by["shared_experts"]["p_value"] > 0.1
    assert by["cuda_graphs"]["explains"] < 0.05 and by["cuda_graphs"]["p_value"] > 0.1
    assert det["finding"].startswith("non-identical repeats follow batch_size")
    assert "shared_experts explains 1%" in det["finding"]
    tok = client.get("/api/v1/attribution", params={"benchmark": "moe-decode-matrix"}).json()
    assert {f["key"] for f in tok["factors"][:2]} == {"batch_size", "cuda_graphs"}
    assert tok["spread_finding"].startswith("the tok_s trial spread follows cuda_graphs")
    r = client.get("/api/v1/attribution", params={"benchmark": "nope"})
    assert r.status_code == 404


def test_an_experiment_id_of_another_benchmark_is_refused(client, settings):
    """A token scoped to one benchmark cannot add runs to another benchmark's experiment: the
    id is resolved within the benchmark of its runs, and the record is refused, nothing kept."""
    from tests.conftest import count_rows
    from tests.service.test_guard import _token

    arms = post_experiment(client, "b-exp", 1.0, blocks=2)
    before = gate(client, "b-exp")
    rows = count_rows(settings.database_url, "runs")
    ingest = {"Authorization": f"Bearer {_token(settings, 'ci-a', 'ingest', ['bench-a'])}"}
    client.app.state.no_tokens_until = 0.0
    tagged = [minimal_run(benchmark="bench-a", started_at=f"2026-11-09T0{k}:00:00Z",
                          experiment={"id": "b-exp", "arm": "candidate", "block": 0},
                          metrics={"tok_s": {"samples": [500.0, 501.0, 499.0]}})
              for k in range(4)]
    r = client.post("/api/v1/runs", json=tagged[0], headers=ingest)
    assert r.status_code == 409, r.text
    err = r.json()["error"]
    assert err["code"] == "experiment_of_another_benchmark" and "\n" not in err["message"]
    assert "belongs to another benchmark" in err["message"] and "'ab'" not in err["message"]
    r = client.post("/api/v1/runs/batch", json={"runs": tagged}, headers=ingest)
    assert r.status_code == 409, r.text
    assert count_rows(settings.database_url, "runs") == rows
    assert gate(client, "b-exp")["verdict"] == before["verdict"]
    # within one batch: the first record's benchmark holds the new id
    mixed = [minimal_run(benchmark="bench-a", experiment={"id": "new", "arm": "baseline",
                                                          "block": 0}),
             minimal_run(benchmark="bench-c", started_at="2026-11-09T05:00:00Z",
                         experiment={"id": "new", "arm": "candidate", "block": 0})]
    write = {"Authorization": f"Bearer {_token(settings, 'ci', 'write')}"}
    r = client.post("/api/v1/runs/batch", json={"runs": mixed}, headers=write)
    assert r.status_code == 409 and "runs[1]" in r.json()["error"]["message"], r.text
    assert count_rows(settings.database_url, "runs") == rows
    # a gate's baseline and candidate runs are resolved within its benchmark too
    theirs = arms["baseline"][0]
    assert client.post("/api/v1/runs", json=minimal_run(benchmark="bench-a", label="mine"),
                       headers=write).status_code == 201
    for body in ({"benchmark": "bench-a", "baseline": f"runs:{theirs}", "run_ids": [theirs]},
                 {"benchmark": "bench-a", "baseline": "label:b-exp-baseline",
                  "run_ids": [theirs]}):
        r = client.post("/api/v1/gate", json=body)
        msg = r.json()["error"]["message"]
        assert r.status_code == 404 and ("not found in bench-a" in msg or
                                         "no run of bench-a" in msg), r.text
