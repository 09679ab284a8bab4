"""nsys: where the binary is, the `nsys profile` command lines, and the SQLite export."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .watchdog import run_watched

TRACE = ["-t", "cuda,nvtx"]


def nsys_binary() -> str | None:
    """`NSYS`, else `nsys` on PATH, else None."""
    return os.environ.get("NSYS") or shutil.which("nsys")


def profile_command(nsys: str, base: Path) -> list[str]:
    """`nsys profile` of a whole command (CUDA and NVTX), its report at `base`.nsys-rep."""
    return [nsys, "profile", *TRACE, "--force-overwrite", "true", "-o", str(base)]


def capture_command(base: Path, cuda_graphs: bool) -> list[str]:
    """nsys flags for a benchmark's profile pass. The capture is bounded by
    cudaProfilerStart/Stop; with CUDA graphs every graph node is its own kernel row
    (`--cuda-graph-trace=node`); spawned TP ranks land in the same report
    (`--trace-fork-before-exec`)."""
    nsys = nsys_binary()
    if not nsys:
        raise RuntimeError("--profile nsys: nsys not found (put it on PATH or set NSYS)")
    cmd = [nsys, "profile", *TRACE, "--capture-range=cudaProfilerApi",
           "--capture-range-end=stop", "--trace-fork-before-exec=true", "--force-overwrite",
           "true", "-o", str(base)]
    if cuda_graphs:
        cmd.append("--cuda-graph-trace=node")
    return cmd


def export_sqlite(rep: Path, timeout: float, label: str, log: Path) -> Path:
    """`nsys export --type sqlite` of a report, under the watchdog; returns the .sqlite path."""
    out = rep.with_suffix(".sqlite")
    nsys = nsys_binary() or "nsys"
    rc, tail = run_watched([nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o",
                            str(out), str(rep)], timeout, label, log)
    if rc != 0 or not out.exists():
        raise RuntimeError(f"nsys export failed: {tail}")
    return out
