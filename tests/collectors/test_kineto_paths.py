"""The Kineto scan's paths give the same trace, column for column, on every committed real
Kineto capture: the C filter's columns (the fast path), msgspec's one-call typed decode with
the list-comprehension columns, the one-event-at-a-time columns, and the standard library's
json where msgspec is missing (bare GPU images)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from collectors.traces import kineto, kineto_events, kineto_scan
from collectors.traces.kineto import load_kineto
from collectors.traces.model import Trace
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted({*DATA.glob("*.json.gz"), *(ROOT / "data").rglob("*.json.gz")})


def _columns(t: Trace) -> dict:
    out = {}
    for part in ("ops", "calls", "ranges"):
        x = getattr(t, part)
        for f in x.__dataclass_fields__:
            v = getattr(x, f)
            out[f"{part}.{f}"] = v.tolist() if isinstance(v, np.ndarray) else v
    out.update(names=t.names, waits=t.waits, warnings=t.warnings, sync=t.has_sync_records,
               labels=t.device_labels, counts=list(t.range_name_counts.items()))
    return out


def test_the_real_traces_are_found():
    assert len(TRACES) >= 10


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_paths_agree(path, monkeypatch):
    fast = _columns(load_kineto(path))  # the C filter's columns
    monkeypatch.setattr(kineto_events, "_keep", None)
    typed = _columns(load_kineto(path))  # msgspec's typed events
    monkeypatch.setattr(kineto_scan.Columns, "add", kineto_scan.Columns.add_each)
    each = _columns(load_kineto(path))
    monkeypatch.setattr(kineto, "msgspec", None)
    plain = _columns(load_kineto(path))
    assert fast["ops.start_ns"], "no ops: the comparison would prove nothing"
    for k in fast:
        assert fast[k] == typed[k], k
        assert fast[k] == each[k], k
        assert fast[k] == plain[k], k
