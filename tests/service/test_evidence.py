"""The evidence row beside each verdict (service/gate/evidence.py), read from a compare answer."""
from __future__ import annotations

from service.gate.evidence import evidence, short_kernel
from service.gate.schemas import CompareOut


def _side(mean):
    return {"runs": 3, "n": 15, "mean": mean, "median": mean, "stdev": 1.0}


def _metric(name, series, base, cand):
    return {"name": name, "direction": "higher", "series": series, "baseline": _side(base),
            "candidate": _side(cand), "delta_pct": 100 * (cand - base) / base,
            "ci_low_pct": None, "ci_high_pct": None, "p_value": None, "threshold_pct": 0.5,
            "verdict": "pass", "reason": "r"}


def test_evidence_belongs_to_the_series_whose_traces_were_diffed():
    m1 = {"batch_size": 1, "gpu": "NVIDIA H200", "gpu_count": 1}
    m8 = {**m1, "batch_size": 8}
    brief = {"id": 2, "commit": None, "branch": None, "label": None, "started_at": None,
             "hardware": {}, "config": {"batch_size": 1}, "determinism": None}
    cmp = CompareOut.model_validate({
        "verdict": "pass", "benchmark": "b", "baseline": "v1", "baseline_run_ids": [1],
        "candidate_run_ids": [2], "correction": "none", "alpha": 0.05,
        "metrics": [_metric("tok_s", m1, 100.0, 97.0), _metric("tok_s", m8, 800.0, 790.0)],
        "distributions": [], "traces": {}, "baseline_runs": [], "candidate_runs": [brief],
        "trace_diff": {"base_run_id": 1, "candidate_run_id": 2, "gaps": [
            {"metric": "aux_gap_mean_us", "base": 79.0, "candidate": 112.4, "delta": 33.4,
             "delta_pct": 42.28},
            {"metric": "step_gpu_time_us_mean", "base": 5250.2, "candidate": 5400.0,
             "delta": 149.8, "delta_pct": 2.85}],
            "kernels": [{"name": "void at::native::reduce_kernel<(int)128, (int)4>(float*)",
                         "delta_per_step_us": 12.34},
                        {"name": "nvjet_sm90_tst_64x8", "delta_per_step_us": -0.5},
                        {"name": "same", "delta_per_step_us": 0.0}]}})
    ev = evidence(cmp, cmp.metrics[0])
    assert ev.text() == ("aux idle gap 79 us → 112.4 us (+42.28%); step GPU time 5,250.2 us "
                         "→ 5,400 us (+2.85%); top changed kernels: `at::native::reduce_kernel` "
                         "+12.3 us/step, `nvjet_sm90_tst_64x8` -0.5 us/step (traces of run 1 → "
                         "run 2)")
    assert not evidence(cmp, cmp.metrics[1])  # M=8 had no traces diffed
    assert short_kernel("void " + "x" * 80 + "<int>()").startswith("...")
