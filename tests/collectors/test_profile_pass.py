"""The profile passes: the nsys pass runs the parent's very config (one batch size, profile-pass mode): no
option is dropped on the way, `--deterministic` included; every pass has a watchdog that stops its
process group and keeps the timed trials."""
from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import time

import pytest

from collectors.bench.config import DecodeConfig, config_from_file
from collectors.bench.passes import PROFILE_HANG_ENV, profile_pass


def test_profile_pass_gets_the_whole_config(tmp_path, monkeypatch):
    seen = tmp_path / "seen.json"
    fake = tmp_path / "nsys"
    # a stand-in for nsys: `profile` keeps the inner command's config and writes a report,
    # `export` fails (the test is about the command the pass runs, not about nsys)
    fake.write_text(f"""#!/bin/sh
if [ "$1" = profile ]; then
  out=""; cfg=""; prev=""
  for a in "$@"; do
    [ "$prev" = "-o" ] && out="$a"
    [ "$prev" = "--from-config" ] && cfg="$a"
    prev="$a"
  done
  cp "$cfg" {seen}
  : > "$out.nsys-rep"
  exit 0
fi
echo "export not available here" >&2
exit 1
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("NSYS", str(fake))
    cfg = DecodeConfig(device="cpu", tp=2, batch_sizes=[1, 4, 8], trials=3, order="late",
                       deterministic=True, extra_work=2, seed=7, profile="nsys",
                       profile_batch_sizes=[1, 8], shape={"layers": 2}, workdir=str(tmp_path),
                       label="pr-150", quiet=True)
    with pytest.raises(RuntimeError, match="nsys export failed"):
        profile_pass(cfg, 8)
    inner = config_from_file(seen)
    assert inner.deterministic and inner.order == "late" and inner.extra_work == 2
    assert inner.batch_sizes == [8] and inner.profile_batch_sizes == [8]
    assert inner.profile_pass == "nsys"
    assert inner.workdir == os.path.join(str(tmp_path), "nsys-pass-M8")
    same = {f.name for f in dataclasses.fields(DecodeConfig)} - {
        "batch_sizes", "profile_batch_sizes", "profile_pass", "quiet", "workdir"}
    assert {k: getattr(inner, k) for k in same} == {k: getattr(cfg, k) for k in same}
    assert json.loads(seen.read_text())["tp"] == 2


def _group_members(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.getpgid(int(d)) == pgid:
                    out.append(int(d))
            except ProcessLookupError:
                pass
    return out


@pytest.mark.serial
def test_hung_profile_pass_ends_by_watchdog_and_keeps_the_timed_trials(tmp_path, monkeypatch):
    from collectors.bench import decode
    from collectors.profile import watchdog

    started = []  # the pass's process group, forked or exec'd, as the watchdog stops it
    real_kill = watchdog.kill_group

    def kill_group(p):
        started.append(p.pid)
        real_kill(p)

    monkeypatch.setattr(watchdog, "kill_group", kill_group)
    monkeypatch.setenv(PROFILE_HANG_ENV, "1")
    # 10 s: the pass must get through its torch import (where it is exec'd) and its two forked
    # ranks' gloo set-up before it reaches the hang (about 2.5 s alone; 8 s was too little on a
    # loaded 2-core machine when each rank was spawned and imported torch again)
    cfg = DecodeConfig(device="cpu", tp=2, batch_sizes=[1], trials=2, steps=3, warmup=1,
                       profile="torch", profile_timeout=10, shape={}, workdir=str(tmp_path),
                       quiet=True)
    t0 = time.monotonic()
    records = decode.run(cfg)
    took = time.monotonic() - t0
    assert len(records) == 1
    rec = records[0]
    assert len(rec["metrics"]["tok_s"]["samples"]) == 2 and min(rec["metrics"]["tok_s"]["samples"]) > 0
    assert rec["profile_error"].startswith("torch profile pass M=1 stopped by the watchdog after 10 s")
    assert "trace_files" not in rec and "trace_summary" not in rec
    assert took < 120
    assert started and not _group_members(started[0])  # the pass's ranks are gone too
    log = tmp_path / "torch_M1.log"
    assert "this profile pass hangs" in log.read_text()


def test_a_forked_torch_pass_that_hangs_is_stopped_with_its_ranks(tmp_path):
    """`collect decode` on the CPU (one thread) forks its PyTorch-profiler pass, torch already
    imported: the pass runs the same config in its own process group, and when it hangs the watchdog
    stops it and its two ranks, and the timed trials are kept."""
    import sys

    env = {**os.environ, PROFILE_HANG_ENV: "1"}
    out, work = tmp_path / "rec.json", tmp_path / "work"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "collectors", "collect", "decode", "--device", "cpu",
                        "--tp", "2", "--batch-sizes", "1", "--trials", "2", "--steps", "3",
                        "--warmup", "1", "--threads", "1", "--profile", "torch",
                        "--profile-timeout", "10", "--workdir", str(work), "--quiet",
                        "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 120
    (rec,) = json.loads(out.read_text())
    assert rec["profile_error"].startswith("torch profile pass M=1 stopped by the watchdog after 10 s")
    assert len(rec["metrics"]["tok_s"]["samples"]) == 2 and "trace_files" not in rec
    log = (work / "torch_M1.log").read_text()
    assert "this profile pass hangs" in log
    # no process of the run is left: the forked pass and its ranks carry the command's line
    left = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                if str(work).encode() in fh.read():
                    left.append(d)
        except OSError:
            pass
    assert not left


def test_torch_profile_pass_runs_in_its_own_process(tmp_path):
    from collectors.bench import decode

    cfg = DecodeConfig(device="cpu", tp=2, batch_sizes=[1, 2], trials=2, steps=3, warmup=1,
                       profile="torch", profile_steps=3, profile_batch_sizes=[2],
                       workdir=str(tmp_path), quiet=True)
    records = decode.run(cfg)
    by_m = {r["config"]["batch_size"]: r for r in records}
    assert "trace_files" not in by_m[1]
    files = by_m[2]["trace_files"]
    assert [os.path.basename(f) for f in files] == ["trace_M2_rank0.json.gz", "trace_M2_rank1.json.gz"]
    from collectors.traces.load import load_trace

    for f in files:  # three profiled steps in each rank's trace (CPU: host ranges, no GPU ops)
        names = load_trace(f).ranges.names
        assert sorted(n for n in names if n.startswith("decode_step")) == [
            "decode_step_0", "decode_step_1", "decode_step_2"]
    assert by_m[2]["trace_summary"]["source"]
    from collectors.traces import analyze_files

    # the TP2 set summarized: its host step ranges count though no device work ran in them
    s = analyze_files(files)
    assert (s["steps"], s["prefill_steps"], s["step_source"]) == (6, 0, "auto: decode_step")
    assert [(r["rank"], r["steps"]) for r in s["ranks"]] == [(0, 3), (1, 3)]
    (said,) = [w for w in s["warnings"] if "no device work" in w]
    assert said.startswith("6 of 6 step ranges hold no device work (a CPU trace)")
    assert not any("no host range matches" in w for w in s["warnings"])


def test_torch_pass_records_cuda_sync_events(monkeypatch, tmp_path):
    """The collector's PyTorch-profiler pass asks for CUDA sync events (spec/metrics.md,
    Stream waits in Kineto traces): the stream waits the ordering check reads."""
    import types

    import torch
    import torch.profiler

    from collectors.profile.torch import torch_trace

    seen: dict = {}

    class Stop(Exception):
        pass

    def fake_profile(**kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(torch.profiler, "profile", fake_profile)
    marker = types.SimpleNamespace(record_function=False)
    with pytest.raises(Stop):
        torch_trace("cpu", marker, lambda: None, tmp_path / "t.json.gz")
    assert marker.record_function is False  # the ranges are plain NVTX again after the pass
    want = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True).__getstate__()
    assert seen["experimental_config"].__getstate__() == want
    assert want != torch._C._profiler._ExperimentalConfig().__getstate__()
