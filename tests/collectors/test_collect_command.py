"""`perfwarden collect command`: repeat a user's benchmark command and read its outputs."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT


def test_repeats_pool_into_one_run(tmp_path):
    script = tmp_path / "fake_bench.py"
    state = tmp_path / "count"
    script.write_text(textwrap.dedent(f"""
        import json, pathlib
        p = pathlib.Path({str(state)!r})
        n = int(p.read_text()) if p.exists() else 0
        p.write_text(str(n + 1))
        print("(EngineCore_DP0 pid=1) INFO GPU KV cache size: 578,368 tokens")
        json.dump({{"completed": 8, "request_throughput": 1.0, "output_throughput": 87.6 + n / 10,
                    "total_token_throughput": 800.0, "max_concurrency": 1, "median_tpot_ms": 11.4}},
                  open({str(tmp_path / "res.json")!r}, "w"))
    """))
    out = tmp_path / "records.json"
    r = subprocess.run([sys.executable, "-m", "service.cli", "collect", "command", "--repeat", "3",
                        "--result", str(tmp_path / "res.json"), "--benchmark", "glm",
                        "--out", str(out), "--", sys.executable, str(script)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "repeat 3/3" in r.stderr
    (rec,) = json.loads(out.read_text())
    assert rec["metrics"]["tok_s"]["samples"] == pytest.approx([87.6, 87.7, 87.8])
    assert rec["metrics"]["kv_capacity_tokens"]["samples"] == [578368]
    assert rec["metrics"]["tpot_ms_median"]["samples"] == [11.4, 11.4, 11.4]


def test_failing_command_is_reported(tmp_path):
    r = subprocess.run([sys.executable, "-m", "service.cli", "collect", "command", "--repeat", "2",
                        "--", sys.executable, "-c", "raise SystemExit(3)"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "exited 3 on repeat 1" in r.stderr


def test_nsys_runs_the_last_repeat_under_nsys_profile(tmp_path):
    """`--nsys` takes nsys from collectors/profile (NSYS, else PATH): the last repeat, and only
    it, runs as `nsys profile -t cuda,nvtx ... -o WORK/profile CMD`."""
    seen = tmp_path / "nsys-argv"
    fake = tmp_path / "nsys"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {seen}\nshift 7\nexec \"$@\"\n")
    fake.chmod(0o755)
    res = tmp_path / "res.json"
    bench = ("import json; print('(EngineCore_DP0 pid=1) INFO GPU KV cache size: 1,000 tokens'); "
             f"json.dump({{'completed': 8, 'request_throughput': 1.0, 'output_throughput': 50.0, "
             f"'total_token_throughput': 80.0, 'max_concurrency': 1}}, open({str(res)!r}, 'w'))")
    r = subprocess.run([sys.executable, "-m", "collectors", "collect", "command", "--repeat", "2",
                        "--nsys", "--result", str(res), "--out", str(tmp_path / "out.json"), "--",
                        sys.executable, "-c", bench],
                       capture_output=True, text=True, cwd=ROOT,
                       env={"PATH": "/usr/bin:/bin", "NSYS": str(fake)})
    assert r.returncode == 0, r.stderr
    (line,) = seen.read_text().splitlines()  # one repeat under nsys
    args = line.split()
    assert args[:6] == ["profile", "-t", "cuda,nvtx", "--force-overwrite", "true", "-o"]
    assert args[6].endswith("/profile") and args[7] == sys.executable
    r = subprocess.run([sys.executable, "-m", "collectors", "collect", "command", "--repeat", "1",
                        "--nsys", "--", sys.executable, "-c", "pass"],
                       capture_output=True, text=True, cwd=ROOT, env={"PATH": "/nonexistent"})
    assert r.returncode == 2 and "--nsys: nsys not found (PATH or NSYS)" in r.stderr
