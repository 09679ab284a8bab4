"""Noise cards through the real app: the noise API, the compare answer, the PR comment's
Markdown and the series page carry the card of the judged series."""
from __future__ import annotations

import random

import pytest

from service.gate.schemas import CompareOut
from service.github.markdown import render
from tests.conftest import minimal_run

# PostgreSQL copies find nothing more here: the card is computed from the series' history, whose
# queries run on both databases in test_gate.py and test_heavy_reads.py.
pytestmark = pytest.mark.one_database


def rec(level: float, i: int, rng: random.Random, **over) -> dict:
    lv = level * (1 + rng.gauss(0, 0.003))
    return minimal_run(benchmark="nc", started_at=f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z",
                       metrics={"tok_s": {"samples": [lv * (1 + rng.gauss(0, 0.001))
                                                      for _ in range(5)]}}, **over)


def test_the_card_is_on_the_noise_api_the_compare_answer_the_comment_and_the_page(client):
    rng = random.Random(6)
    r = client.post("/api/v1/runs/batch", json={"runs": [rec(1000, i, rng) for i in range(24)]})
    assert r.status_code == 201, r.text
    noise = client.get("/api/v1/noise", params={"benchmark": "nc"}).json()
    (card,) = noise["cards"]
    assert card["runs"] == 24 and card["modes"] == 1 and card["aa_draws"] == 100
    assert set(card["detectable_pct"]) == {"1", "3", "5"}
    assert card["detectable_pct"]["1"] > card["detectable_pct"]["5"]
    assert "run-to-run spread" in card["line"] and "A/A gates" in card["line"]
    base = client.post("/api/v1/runs/batch", json={"runs": [rec(1000, 30, rng, branch="rel")]})
    cand = client.post("/api/v1/runs/batch", json={"runs": [rec(1000, 31, rng, pr=3,
                                                                 branch="fix")]})
    b, c = base.json()["ids"][0], cand.json()["ids"][0]
    cmp = client.get("/api/v1/compare", params={"benchmark": "nc", "baseline": f"runs:{b}",
                                                 "run_ids": str(c)})
    assert cmp.status_code == 200, cmp.text
    (same,) = cmp.json()["noise"]
    assert same["series_id"] == card["series_id"] and same["runs"] == 24
    body = render(CompareOut.model_validate(cmp.json()))
    assert "Noise of these series" in body and "24 runs; run-to-run spread" in body
    page = client.get(f"/benchmarks/nc?series={card['series_id']}&metric=tok_s")
    assert page.status_code == 200 and "Noise card" in page.text
    assert "clock mode" in page.text
