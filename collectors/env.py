"""What the run ran on: GPU, driver, CUDA, torch, NCCL, host, the commit under test, GPU state."""
from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from datetime import datetime, timezone


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run(cmd: list[str], cwd: str | None = None) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


BISECT_ENV = "PERFWARDEN_BISECT"  # set by `perfwarden bisect`: the bisect's id
BISECT_COMMIT_ENV = "PERFWARDEN_BISECT_COMMIT"  # ... and the full SHA of the commit under test


def git_info(cwd: str | None = None) -> dict:
    """The checked-out commit (its full SHA, spec/api.md, Commits match both ways) and branch."""
    out = {}
    commit = _run(["git", "rev-parse", "HEAD"], cwd)
    if commit:
        out["commit"] = commit
        branch = _run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd)
        if branch and branch != "HEAD":
            out["branch"] = branch
    return out


def git_identity(cwd: str | None = None) -> dict:
    """The commit under test: during `perfwarden bisect` the commit it checked out; else
    GITHUB_SHA / GITHUB_REF_NAME in CI, else the working repository."""
    bisected = os.environ.get(BISECT_COMMIT_ENV)
    if os.environ.get(BISECT_ENV):
        return {"commit": bisected} if bisected else {k: v for k, v in git_info(cwd).items()
                                                      if k == "commit"}
    sha, ref = os.environ.get("GITHUB_SHA"), os.environ.get("GITHUB_REF_NAME")
    if sha:
        return {"commit": sha, **({"branch": ref} if ref else {})}
    return git_info(cwd)


def bisect_tag(commit: str | None) -> dict | None:
    """The `bisect {id, commit}` tag of a record posted during `perfwarden bisect` (None
    outside one): such runs never enter a history."""
    bid = os.environ.get(BISECT_ENV)
    if not bid:
        return None
    return {"id": bid, "commit": os.environ.get(BISECT_COMMIT_ENV) or commit}


def nvidia_smi_gpus() -> list[str]:
    """GPU model names on this node (empty without nvidia-smi)."""
    out = _run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    return [line.strip() for line in out.splitlines() if line.strip()] if out else []


def hardware(device: str, gpu_count: int) -> dict:
    hw: dict = {"host": socket.gethostname(), "gpu_count": gpu_count}
    if device == "cuda":
        import torch

        hw["gpu"] = torch.cuda.get_device_name(0)
        drv = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        if drv:
            hw["driver"] = drv.splitlines()[0].strip()
    else:
        hw["gpu"] = "cpu"
        hw["cpu"] = platform.processor() or platform.machine()
        hw["cpu_count"] = os.cpu_count()
    return hw


def environment() -> dict:
    import torch

    env = {"torch": torch.__version__.split("+")[0], "python": platform.python_version()}
    if torch.version.cuda:
        env["cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        try:
            env["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception as e:  # noqa: BLE001 - NCCL may be absent from a build
            env["nccl"] = f"unknown ({type(e).__name__})"
    return env


GPU_FIELDS = ("clocks.sm", "clocks.mem", "power.draw", "temperature.gpu",
              "clocks_throttle_reasons.active")


def gpu_state(index: int = 0) -> dict | None:
    """SM and memory clocks (MHz), power (W), temperature (C) and throttle reasons, or None."""
    if not shutil.which("nvidia-smi"):
        return None
    out = None
    for fields in (GPU_FIELDS, GPU_FIELDS[:-1] + ("clocks_event_reasons.active",)):
        out = _run(["nvidia-smi", f"--query-gpu={','.join(fields)}",
                    "--format=csv,noheader,nounits", "-i", str(index)])
        if out:
            break
    if not out:
        return None
    vals = [v.strip() for v in out.splitlines()[0].split(",")]
    if len(vals) != len(GPU_FIELDS):
        return None
    keys = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "throttle_reasons")
    state: dict[str, float | str | None] = {}
    for k, v in zip(keys, vals):
        try:
            state[k] = float(v) if k != "throttle_reasons" else v
        except ValueError:
            state[k] = None
    return state
