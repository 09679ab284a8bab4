"""The decode benchmark's configuration (`perfwarden collect decode`), shared by its processes:
the timed run (bench/decode.py), the profile passes (bench/passes.py) and the presets."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class DecodeConfig:
    device: str = "cpu"
    tp: int = 1
    batch_sizes: list[int] = field(default_factory=lambda: [1])
    trials: int = 5
    steps: int = 32
    warmup: int = 8
    order: str = "overlap"
    cuda_graphs: bool = False
    profile: str = "none"  # none | nsys | torch
    profile_steps: int = 10
    profile_batch_sizes: list[int] | None = None
    shape: dict = field(default_factory=dict)
    gpu_memory_utilization: float = 0.9
    kv_cache_gib: float = 4.0  # CPU only: memory granted to the KV cache
    extra_work: int = 0
    threads: int = 0  # CPU: torch threads per rank (0: OMP_NUM_THREADS, else cpu_threads())
    plant_pct: float = 0.0  # planted slowdown, percent of the step time (CUDA only)
    deterministic: bool = False  # torch.use_deterministic_algorithms + a fixed cuBLAS workspace
    seed: int = 1234
    benchmark: str = "moe-decode"
    label: str | None = None
    workdir: str = ""
    routed_kernel: str = "bmm"  # bmm | resident (one persistent kernel with a grid barrier)
    profile_timeout: float = 300.0  # watchdog of each profile pass, seconds
    profile_pass: str = ""  # internal: this process is the profile pass ("nsys" or "torch")
    quiet: bool = False
    # set by run(): the visible GPUs when fewer than the ranks, which then share them round-robin
    # over gloo (a functional capture of the TP shape, not a speed figure); 0: one GPU a rank
    shared_gpus: int = 0


def log(cfg: DecodeConfig, msg: str) -> None:
    if not cfg.quiet:
        print(msg, file=sys.stderr, flush=True)


def config_from_file(path: str | os.PathLike) -> DecodeConfig:
    """A DecodeConfig written by the parent process (a profile pass or a sweep cell)."""
    data = json.loads(Path(path).read_text())
    return DecodeConfig(**data)


