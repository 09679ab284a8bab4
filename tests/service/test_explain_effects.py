"""Explain on run means, with effects planted on the committed H200 throughput curve (TP1, CUDA
graphs, M=1/4/7/8; tests/service/planted_matrix.throughput): the outlier level is the level whose
effect the key explains, not the lowest mean of a throughput that grows with M, and an
interaction of two keys is named as one."""
from __future__ import annotations

import statistics

import pytest

from tests.conftest import LOCAL
from tests.service.planted_matrix import throughput

# PostgreSQL copies find nothing more here: explain's reads run on both databases in
# test_explain.py (test_explain_on_the_committed_h200_runs); these plant effects in its statistics.
pytestmark = pytest.mark.one_database


def _switch(at: int, by: float = 0.97):  # noqa: ANN202 - a planted factor
    return lambda M, order: by if M == at else 1.0


def _interaction(M: int, order: str) -> float:
    """Overlap 3% slower at M=1/4 and 3% faster at M=7/8: no main effect of the order."""
    return (1.03 if M >= 7 else 0.97) if order == "overlap" else 1.0


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("at", [8, 4, 1])
def test_the_outlier_level_is_the_planted_switch_not_the_lowest_mean(seed, at):
    from service.explain.report import split_levels
    from service.stats.attribution import RunFacts, attribute
    from service.stats.effects import outlier_level

    facts = [RunFacts(r["config"], statistics.mean(r["metrics"]["tok_s"]["samples"]), None)
             for r in throughput(_switch(at), "planted-switch", seed)]
    lead = attribute(facts, "mean")[0]
    assert lead.key == "batch_size" and min(lead.level_values, key=lead.level_values.get) == "1"
    assert outlier_level(facts, "mean", "batch_size") == str(at)
    assert split_levels(lead, "mean", facts) == ([str(at)], [m for m in "1478" if m != str(at)])


def test_the_interaction_is_tested_and_named(settings):
    from service.stats.attribution import RunFacts
    from service.stats.effects import interactions

    runs = throughput(_interaction, "planted-interaction", seed=3)
    facts = [RunFacts(r["config"], statistics.mean(r["metrics"]["tok_s"]["samples"]), None)
             for r in runs]
    found = {x.name: x for x in interactions(facts, "mean")}
    assert set(found) == {"batch_size x shared_experts", "batch_size x variant",
                          "shared_experts x variant"}
    assert found["batch_size x shared_experts"].p_corrected < 1e-6
    assert found["batch_size x variant"].p_corrected > 0.05
    assert all(x.p_corrected >= x.p_value for x in found.values())
    # the same matrix without the interaction: nothing is named
    none = throughput(_switch(8, 1.0), "planted-none", seed=3)
    plain = [RunFacts(r["config"], statistics.mean(r["metrics"]["tok_s"]["samples"]), None)
             for r in none]
    assert all(x.p_corrected > 0.05 for x in interactions(plain, "mean"))

    from fastapi.testclient import TestClient

    from service.main import create_app

    with TestClient(create_app(settings), **LOCAL) as c:
        assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
        ex = c.get("/api/v1/explain", params={"benchmark": "planted-interaction",
                                              "metric": "tok_s"}).json()
    sentence = ex["decision"]
    assert sentence.startswith("tok_s run means follow batch_size"), sentence
    assert "batch_size x shared_experts interact" in sentence
    assert "the effect of batch_size depends on shared_experts" in sentence
    assert "shared_experts is not the cause" not in sentence
    assert "variant is not the cause" in sentence


def test_explain_over_rest_compares_the_switched_level(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    runs = throughput(_switch(8), "planted-switch", seed=0)
    with TestClient(create_app(settings), **LOCAL) as c:
        assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
        ex = c.get("/api/v1/explain", params={"benchmark": "planted-switch",
                                              "metric": "tok_s"}).json()
    assert ex["key"] == "batch_size" and ex["runs"] == len(runs)
    assert ex["diff"]["outlier_levels"] == ["8"]
    assert ex["diff"]["reference_levels"] == ["1", "4", "7"]
    assert "interact" not in ex["decision"]
