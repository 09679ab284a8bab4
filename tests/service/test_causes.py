"""A cause on every verdict but pass, from what was measured: configuration before environment
before code before noise, each line naming the evidence that decided it."""
from __future__ import annotations

from types import SimpleNamespace

from service.explain.causes import cause, configuration, environment
from service.stats.gate import Comparison, judge

HW = {"gpu": "NVIDIA H200", "gpu_count": 1, "driver": "580.159.04"}
ENV = {"torch": "2.11.0", "cuda": "13.0", "nccl": "2.28.9"}
CLEAN = "0x0000000000000000"


def _run(i, config=None, hardware=None, env=None, clock=1980.0, throttle=CLEAN):
    trials = [{"gpu": {"sm_clock_mhz": clock, "throttle_reasons": throttle}}] * 3
    return SimpleNamespace(id=i, config=config or {"tp": 1, "batch_size": 4},
                           hardware=hardware or HW, environment=env or ENV,
                           extra={"trials": trials}, trace_summary=None)


def _judged(drop: float, spread: float = 1.0):
    base = [[1000.0 + spread * d for d in r] for r in ([0.0, 3.0, -2.0], [1.0, -1.0, 2.0],
                                                       [0.0, 1.0, -3.0])]
    cand = [[v * (1 - drop) for v in r] for r in base]
    c = Comparison("tok_s", "tok/s", "higher", 2.0, False, {"batch_size": 4}, 1, base, cand,
                   baseline_ids=(1, 2, 3), candidate_ids=(4, 5, 6))
    return judge([c])


def test_pass_has_no_cause():
    runs = {i: _run(i) for i in range(1, 7)}
    assert cause(_judged(0.0), runs, [], []) is None


def test_configuration_then_environment_then_noise():
    j = _judged(0.07)
    assert j.verdict == "fail"
    runs = {i: _run(i, config={"tp": 1, "batch_size": 4, "steps": 128}) for i in range(1, 4)}
    runs.update({i: _run(i, config={"tp": 1, "batch_size": 4, "steps": 64}) for i in (4, 5, 6)})
    c = cause(j, runs, [], [])
    assert c is not None and c.kind == "configuration" and "steps 128 → 64" in c.line
    assert cause(j, runs, [], ["steps"]).kind != "configuration"  # varied on purpose
    runs.update({i: _run(i, env={**ENV, "torch": "2.12.0"}, clock=1755.0) for i in (4, 5, 6)})
    c = cause(j, runs, [], [])
    assert c.kind == "environment" and "torch 2.11.0 → 2.12.0" in c.line
    assert "median SM clock 1,980 → 1,755 MHz" in c.line
    runs = {i: _run(i) for i in range(1, 7)}
    c = cause(j, runs, [], [])  # all alike, a drop past what three runs can detect
    assert c.kind == "code" and "no runs with traces" in c.line and "tok_s -7.00%" in c.line
    assert "beyond the noise of the baseline's 3 runs" in c.line
    small = _judged(0.01, spread=40.0)  # -1% of runs 4% apart: inconclusive, within the noise
    c = cause(small, runs, [], [])
    assert small.verdict != "pass" and c.kind == "noise" and "within the noise" in c.line


def test_throttling_on_one_side_is_environment():
    base = [_run(i) for i in (1, 2, 3)]
    cand = [_run(i, throttle="0x0000000000000004") for i in (4, 5, 6)]
    assert environment(base, cand) == ["throttle reasons active on the candidate side only"]
    assert environment(base, base) == [] and configuration(base, base, []) == []


def test_traces_too_few_to_test_are_said_untested():
    from service.gate.schemas import TraceEvidence

    note = "1 baseline and 1 candidate run(s) with a trace: an interval needs 3 a side"
    ev = TraceEvidence(series={}, baseline_run_ids=[1], candidate_run_ids=[4],
                       step_gpu_time_us=None, tested_kernels=0, correction="", note=note,
                       kernels=[], lanes=[])
    c = cause(_judged(0.07), {i: _run(i) for i in range(1, 7)}, [ev], [])
    assert c.kind == "code" and f"the traces' figures untested ({note})" in c.line


def test_a_server_of_unknown_identity_is_never_said_to_match():
    """Runs whose files named no model or tp (an SGLang bench_serving line) may be of two
    servers: the cause says so and how to settle it, never "config and environment match"."""
    base = [[1000.0 + d for d in r] for r in ([0.0, 3.0, -2.0], [1.0, -1.0, 2.0])]
    cand = [[v * 0.25 for v in r] for r in base]
    series = {"concurrency": 1, "unknown": "model,tp"}
    c = Comparison("tok_s", "tok/s", "higher", 2.0, False, series, 1, base, cand,
                   baseline_ids=(1, 2), candidate_ids=(3, 4))
    j = judge([c])
    runs = {i: _run(i, config=dict(series)) for i in range(1, 5)}
    got = cause(j, runs, [], [])
    assert got is not None and got.kind == "configuration", got
    assert "model and tp unknown" in got.line and "--config model=..." in got.line
    assert "match" not in got.line
    known = cause(j, runs, [], ["model", "tp"])  # compared across them on purpose
    assert known is not None and "unknown" not in known.line
