"""The traces' evidence across runs: six runs of the real H200 trace, every kernel jittered 1% run
by run and one kernel 15% slower in the three candidates, name that kernel alone, with an
interval that holds its true change, and none of the kernels that only jittered."""
from __future__ import annotations

import pytest

from collectors.traces import analyze_files
from collectors.traces.diff import run_kernels
from collectors.traces.names import kernel_key
from service.stats.traces import LANES, RunTrace, trace_changes
from tests.kernel_runs import SLOWDOWN, SLOWED, SOURCE, six_traces


def _run(i: int, path) -> RunTrace:
    s = analyze_files([path])
    kernels, names, whole = run_kernels(s)
    return RunTrace(i, kernels, names, whole, {k: s.get(k) for k, _ in LANES})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base, cand = six_traces(tmp_path_factory.mktemp("six"))
    return [_run(i, p) for i, p in enumerate(base)], [_run(10 + i, p) for i, p in enumerate(cand)]


def test_only_the_slowed_kernel_is_evidence_with_its_interval(runs):
    base, cand = runs
    tc = trace_changes(base, cand)
    (slowed,) = tc.evidence
    assert slowed.name == SLOWED and slowed.significant and slowed.material
    true = (SLOWDOWN - 1) * _run(0, SOURCE).kernels[kernel_key(SLOWED)]
    assert slowed.ci_low_us < true < slowed.ci_high_us and slowed.ci_low_us > 0
    # every other kernel only jittered: tested (the ones large enough) and never evidence
    assert len(tc.kernels) + tc.small == 16 and len(tc.kernels) >= 4
    assert all(not c.evidence for c in tc.kernels if c.name != SLOWED)
    # the lanes barely move when kernels stretch in place: tested, not significant
    assert {c.key for c in tc.lanes} == {k for k, _ in LANES}
    assert not any(c.significant and c.material for c in tc.lanes)


def test_too_few_runs_with_traces_test_nothing_and_say_why(runs):
    base, cand = runs
    tc = trace_changes(base[:2], cand)
    assert not tc.tested and tc.kernels == [] and "needs 3 a side" in tc.note


def test_a_kernel_in_every_candidate_and_no_baseline_run_is_new(runs):
    base, cand = runs
    extra = [RunTrace(r.run_id, {**r.kernels, "new_kernel": 300.0}, {**r.names,
                                                                   "new_kernel": "new_kernel"},
                      r.whole, r.lanes) for r in cand]
    tc = trace_changes(base, extra)
    new = next(c for c in tc.kernels if c.key == "new_kernel")
    assert new.status == "new" and new.evidence and new.ci_low_us is None
