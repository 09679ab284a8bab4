"""The gate's answer as its readers see it (service/gate/view.py), and the text and Markdown
renderers saying the same view: one verdict word, one level, the same reasons."""
from __future__ import annotations

import contextlib
import io

from service.gate.report import print_gate
from service.gate.schemas import GateOut
from service.gate.view import view
from service.github.markdown import reasons, verdict_table


def _metric(name: str, bs: int, verdict: str, **extra) -> dict:
    side = {"runs": 3, "n": 9, "mean": 100.0, "median": 100.0, "stdev": 1.0}
    return {"name": name, "direction": "higher", "series": {"model": "m", "batch_size": bs},
            "baseline": side, "candidate": side, "delta_pct": -4.0, "ci_low_pct": -6.0,
            "ci_high_pct": -2.0, "bound_pct": -5.5, "p_value": 0.01, "threshold_pct": 2.0,
            "verdict": verdict, "reason": f"{name} at {bs}: {verdict}", **extra}


def _answer(looks: int = 1) -> GateOut:
    return GateOut.model_validate({
        "verdict": "fail", "benchmark": "b", "baseline": "v1", "baseline_run_ids": [1],
        "candidate_run_ids": [2], "correction": "holm", "alpha": 0.05, "looks": looks,
        "metrics": [
            _metric("tok_s", 1, "regression", spread_from="history", spread_runs=12),
            _metric("kv_capacity_tokens", 1, "pass", method="exact"),
            _metric("tok_s", 8, "inconclusive", spread_from="candidate", spread_runs=4),
            _metric("aux_gap_mean_us", 8, "regression", role="evidence")]})


def test_the_view_derives_each_figure_once():
    v = view(_answer())
    assert (v.verdict, v.word, v.level, v.alpha) == ("fail", "FAIL", "95%", "alpha 0.05")
    assert view(_answer(looks=4)).alpha == "alpha 0.05 over 4 looks"
    assert v.common == {"model": "m"} and v.common_label == "model=m"
    assert [r.differs for r in v.rows] == ["M=1"] * 2 + ["M=8"] * 2
    assert [r.exact for r in v.rows] == [False, True, False, False]
    assert [r.evidence_only for r in v.rows] == [False, False, False, True]
    # the reasons: gate metrics that did not pass, never an evidence metric's
    assert [r.reason for r in v.reasons] == ["tok_s at 1: regression", "tok_s at 8: inconclusive"]
    assert [r.metric.name for r in v.regressions] == ["tok_s", "aux_gap_mean_us"]
    assert [r.spread for r in v.rows] == [
        "run-to-run spread from the series' history (12 runs)", None,
        "run-to-run spread from the candidate's 4 runs (wider than the series' history)", None]
    # evidence goes under the last row of each series only; only series 8 has a figure for it
    assert [r.evidence is not None for r in v.rows] == [False, True, False, True]
    assert [bool(r.evidence) for r in v.rows] == [False, False, False, True]
    assert v.rows[3].evidence and "aux idle gap" in v.rows[3].evidence.text()
    assert all(v.row(m) is r for m, r in zip(v.answer.metrics, v.rows))


def test_text_and_markdown_say_the_same_view():
    cmp = _answer()
    v = view(cmp)
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        print_gate(cmp)
    out = text.getvalue()
    assert out.startswith("verdict: FAIL ") and "; alpha 0.05)" in out and "95% CI" in out
    for r in v.reasons:
        assert f"  - {r.metric.name} [{r.series}]: {r.reason}" in out
    for r in v.rows:
        if r.spread:
            assert f"  - {r.metric.name} [{r.series}]: {r.spread}" in out
    assert "aux_gap_mean_us (evidence)" in out and "aux_gap_mean_us at 8" not in out
    md = reasons(cmp)
    assert md == ["- `tok_s` (M=1): tok&#95;s at 1: regression",
                  "- `tok_s` (M=8): tok&#95;s at 8: inconclusive"]
    table = "\n".join(verdict_table(cmp))
    assert f"Every row: `{v.common_label}`" in table and "change (95% CI)" in table
    assert table.count("↳ evidence") == 1  # series 1 has no profiler figure; series 8 has one
