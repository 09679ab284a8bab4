"""A release measured once, on a noisy GPU fleet: a served perfwarden holds the nightly
series' history; the release's single baseline run came out 3% low (a throttled process). A
pull request truly 1% slower must not read as an improvement: `perfwarden gate` says
inconclusive, names the outlying run and says n=1 with the runs that would confirm. A series
with one run a side and no history shows its change in every row, marked `n=1: no interval`."""
from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone

import httpx

from .shell import PERFWARDEN, env

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _run(i: int, level: float, label: str, benchmark: str = "nightly",
         branch: str = "main") -> dict:
    wobble = 1 + 0.0012 * ((i * 7) % 5 - 2) / 2  # 0.12% run to run, a quiet H200 node
    return {"benchmark": benchmark, "config": {"tp": 1, "batch_size": 1}, "label": label,
            "hardware": {"gpu": "NVIDIA H200", "gpu_count": 1}, "branch": branch,
            "commit": f"{i:04d}{'ab12' * 9}"[:40], "started_at": (T0 + timedelta(hours=i)).isoformat(),
            "metrics": {"tok_s": {"samples": [level * wobble * f for f in (0.9998, 1.0, 1.0002)]},
                        "tpot_ms_median": {"samples": [10.0 / (level * wobble)]}}}


def _gate(url: str, benchmark: str, baseline: str, run: int, *metrics: str):
    cmd = [PERFWARDEN, "gate", "--server", url, "--benchmark", benchmark, "--baseline", baseline,
           "--run", str(run)] + [a for m in metrics for a in ("--metric", m)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=120)


def test_an_outlying_single_baseline_run_never_makes_an_improvement(served):
    with httpx.Client(base_url=served.url, timeout=60) as c:
        for i in range(20):
            assert c.post("/api/v1/runs", json=_run(i, 1000.0, "nightly")).status_code == 201
        release = c.post("/api/v1/runs", json=_run(20, 970.0, "v2.0", branch="release")).json()["id"]
        pr = c.post("/api/v1/runs", json=_run(21, 990.0, "pr-7", branch="pr-7")).json()["id"]
    subprocess.run([PERFWARDEN, "baseline", "set", "v2.0", "--benchmark", "nightly", "--run",
                    str(release), "--server", served.url], check=True, env=env(), timeout=120)
    got = _gate(served.url, "nightly", "v2.0", pr, "tok_s")
    assert got.returncode == 3, got.stdout + got.stderr  # inconclusive, not an improvement
    out = " ".join(got.stdout.split())
    assert "verdict: INCONCLUSIVE" in out and "+2.18%" in out
    assert "the improvement rests on a baseline run far outside the series' history" in out
    assert f"run {release} (robust z -" in out
    assert "without it the change is -1.00% (regression); measure the baseline again" in out
    assert "n=1 (1 vs 1 runs, spread from the series' history): 2 more baseline and " \
           "candidate runs would confirm it" in out


def test_one_run_a_side_shows_its_change_in_every_row(served):
    with httpx.Client(base_url=served.url, timeout=60) as c:
        base = c.post("/api/v1/runs", json=_run(0, 1000.0, "v1", "single")).json()["id"]
        cand = c.post("/api/v1/runs", json=_run(1, 970.0, "pr-8", "single")).json()["id"]
    subprocess.run([PERFWARDEN, "baseline", "set", "v1", "--benchmark", "single", "--run",
                    str(base), "--server", served.url], check=True, env=env(), timeout=120)
    got = _gate(served.url, "single", "v1", cand, "tok_s", "tpot_ms_median")
    assert got.returncode == 3, got.stdout + got.stderr
    rows = {ln.split()[0]: ln for ln in got.stdout.splitlines() if ln.startswith("  tok_s")
            or ln.startswith("  tpot_ms_median")}
    assert "-2.88%" in rows["tok_s"] and "n=1: no interval" in rows["tok_s"]
    assert "+2.97%" in rows["tpot_ms_median"] and "n=1: no interval" in rows["tpot_ms_median"]
    assert "collect 2 more baseline runs" in got.stdout
