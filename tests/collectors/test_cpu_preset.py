"""`collect decode --preset cpu`: the preset's values where no flag was given, a given flag wins,
a given shape is merged over the preset's; the CPU runs it records say so."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from collectors.bench.presets import PRESETS, apply_preset
from collectors.cli import build_parser
from collectors.errors import UsageError
from tests.conftest import ROOT


def _args(*argv: str):
    a = build_parser()[0].parse_args(["collect", "decode", *argv])
    apply_preset(a)
    return a


def test_the_preset_fills_what_was_not_given():
    a = _args("--preset", "cpu")
    assert (a.device, a.threads, a.steps, a.warmup) == ("cpu", 1, 64, 4)
    assert json.loads(a.shape) == PRESETS["cpu"]["shape"]


def test_given_flags_win_and_a_shape_merges_over_the_presets():
    a = _args("--preset", "cpu", "--threads", "2", "--steps", "8", "--shape", '{"layers": 1}')
    assert (a.threads, a.steps) == (2, 8)
    assert json.loads(a.shape) == {**PRESETS["cpu"]["shape"], "layers": 1}
    with pytest.raises(UsageError, match="--shape: not JSON"):
        _args("--preset", "cpu", "--shape", "{layers")


def test_a_preset_run_records_its_shape_and_thread(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "collectors", "collect", "decode", "--preset", "cpu",
                        "--trials", "3", "--steps", "4", "--quiet", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    (rec,) = json.loads(out.read_text())
    assert rec["config"]["threads"] == 1 and rec["config"]["hidden"] == 1024
    assert len(rec["metrics"]["cpu_tok_s"]["samples"]) == 3
