"""Built-in settings of `collect decode` (`--preset NAME`).

`cpu`: a shape and thread setting for a CPU runner whose run-to-run spread of `cpu_tok_s` is
small enough to gate on. The shared expert is most of a step's work (hidden 1024, shared
intermediate 1024, four small routed experts), so `--extra-work N` (N more shared-expert passes
per layer) costs a known share of a step; one torch thread per rank, because tokens per
CPU-second of one thread hardly move when another process shares the cores, while a second
thread's spin-waits and the wall clock do. Its measured A/A spread and the threshold it holds
are in docs/results.md ("CPU preset"), measured by bench/cpu_preset.py.
"""
from __future__ import annotations

import argparse

from ..errors import UsageError
from .config import DecodeConfig

# the shape (ModelShape fields) and the decode flags of each preset
PRESETS: dict[str, dict] = {
    "cpu": {
        "device": "cpu",
        "threads": 1,
        "steps": 64,
        "warmup": 4,
        "trials": 5,
        "shape": {"layers": 2, "hidden": 1024, "heads": 4, "kv_heads": 2, "head_dim": 64,
                  "experts": 4, "top_k": 1, "expert_inter": 128, "shared_inter": 1024,
                  "vocab": 1024, "context": 128, "dtype": "float32"},
    },
}

# what the preset's measured spread supports (docs/github-action.md, data/cpu_preset/): gate
# `cpu_tok_s` at 30%, with RUNS runs (processes) a commit and a baseline of at least 5 runs
GATE_ARGS = {"cpu": "--metric cpu_tok_s --threshold cpu_tok_s=30"}
RUNS = {"cpu": 3}


def cpu_default(tp: int) -> bool:
    """Is the CPU preset the shape of a CPU run that names none: does its shape split over `tp`
    ranks (as the model splits heads and the experts' intermediate sizes)?"""
    shape = PRESETS["cpu"]["shape"]
    return all(shape[k] % tp == 0 for k in ("heads", "expert_inter", "shared_inter"))


def apply_preset(args: argparse.Namespace) -> None:
    """Fill in the preset's values where the command line left a flag at its default (the
    DecodeConfig's); a flag given with another value wins, and a `--shape` given beside a
    preset is merged over the preset's shape."""
    import dataclasses
    import json


    defaults = {f.name: f.default for f in dataclasses.fields(DecodeConfig)}
    for key, value in PRESETS[args.preset].items():
        if key == "shape":
            try:
                given = json.loads(args.shape) if args.shape else {}
            except json.JSONDecodeError as e:
                raise UsageError(f"--shape: not JSON ({e.msg})") from None
            args.shape = json.dumps({**value, **given}, separators=(",", ":"))
        elif getattr(args, key) == defaults[key]:
            setattr(args, key, value)
