"""Runs whose traces differ the way real reruns and a real slowdown do: the real H200 Kineto trace
(one MoE layer, M=4) written again with every kernel's duration jittered by 1% (one factor per
kernel per run, as a rerun moves each kernel a little) and, on the candidate side, one kernel 15%
slower. Seeded: the same runs every time."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from tests.conftest import DATA

SOURCE = DATA / "kineto_1layer_M4.json.gz"
SLOWED = "nvjet_sm90_tst_128x8_64x12_4x1_v_bz_NNT"  # 244 us per step of 3,345: 7%
JITTER = 0.01
SLOWDOWN = 1.15


def write_trace(dst: Path, seed: int, slowed: bool) -> Path:
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()))
    rng = np.random.default_rng(seed)
    names = sorted({e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel"})
    factor = dict(zip(names, 1 + JITTER * rng.standard_normal(len(names))))
    if slowed:
        factor[SLOWED] *= SLOWDOWN
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["dur"] = round(e["dur"] * float(factor[e["name"]]), 3)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dst


def six_traces(folder: Path) -> tuple[list[Path], list[Path]]:
    """Three baseline and three candidate traces (the candidates with the kernel slowed)."""
    base = [write_trace(folder / f"base{i}" / "traces" / "rank0.json.gz", 100 + i, False)
            for i in range(3)]
    cand = [write_trace(folder / f"cand{i}" / "traces" / "rank0.json.gz", 200 + i, True)
            for i in range(3)]
    return base, cand
