"""A factorial matrix made on the CPU with torch, where a planted config key switches the
operator: past batch size 2 the rows are summed by `index_add_` in a shuffled order (as an atomic
scatter adds them in whatever order threads arrive), below it by one `sum`. The shuffle differs
per repeat, so repeats past the switch are not bitwise identical, unless the cell runs in
deterministic mode (the order fixed). A second key (`variant`: an extra multiply by 1) changes
nothing that matters. Each cell has its own PyTorch-profiler trace (2 decode steps).

`throughput` plants effects on run means instead: the committed H200 throughput curve (TP1,
CUDA graphs, M=1/4/7/8, growing about linearly with M) with each run's samples drawn from the
real run's own samples, times a planted factor per cell."""
from __future__ import annotations

import gzip
import json
import random
import time
from pathlib import Path

from collectors import env as envinfo
from collectors.record import determinism, digest, metric

SWITCH = 2  # batch sizes past this take the shuffled index_add_ path
STEPS, REPEATS = 4, 4


def _step(x, w, M: int, variant: str, det: bool, gen):  # noqa: ANN001, ANN202
    import torch

    h = x @ w
    if variant == "b":
        h = h * 1.0
    if M > SWITCH:
        order = torch.arange(M) if det else torch.randperm(M, generator=gen)
        return torch.zeros(1, h.shape[1]).index_add_(0, torch.zeros(M, dtype=torch.long), h[order])
    return h.sum(0, keepdim=True)


def _cell(M: int, variant: str, det: bool, folder: Path, name: str) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    g = torch.Generator().manual_seed(7)
    x, w = torch.randn(M, 257, generator=g), torch.randn(257, 257, generator=g)
    digests, tok_s = [], []
    for rep in range(REPEATS):
        gen = torch.Generator().manual_seed(100 + rep)
        t0 = time.perf_counter()
        out = [_step(x, w, M, variant, det, gen) for _ in range(STEPS)]
        tok_s.append(M * STEPS / (time.perf_counter() - t0))
        digests.append(digest(b"".join(o.numpy().tobytes() for o in out)))
    gen = torch.Generator().manual_seed(1)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for s in range(2):
            with record_function(f"decode_step_{s}"):
                _step(x, w, M, variant, det, gen)
    raw = folder / f"{name}.json"
    prof.export_chrome_trace(str(raw))
    (folder / "traces").mkdir(exist_ok=True)
    with gzip.open(folder / "traces" / f"{name}.json.gz", "wb") as f:
        f.write(raw.read_bytes())
    raw.unlink()
    config = {"batch_size": M, "variant": variant, "device": "cpu"}
    if det:
        config["deterministic"] = True
    return {"benchmark": "planted-matrix", "config": config, "label": "planted",
            "hardware": envinfo.hardware("cpu", 1), "environment": envinfo.environment(),
            "started_at": envinfo.utc_now(), "metrics": {"tok_s": metric("tok_s", tok_s)},
            "determinism": determinism(digests), "trace_files": [f"traces/{name}.json.gz"],
            "idempotency_key": f"planted-matrix:{name}"}


def make(folder: Path, sizes=(1, 2, 4, 8)) -> Path:  # noqa: ANN001
    """Writes matrix.json (records naming their traces) into `folder`; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    recs = [_cell(M, v, det, folder, f"M{M}-{v}{'-det' if det else ''}")
            for det in (False, True) for v in ("a", "b") for M in sizes]
    out = folder / "matrix.json"
    out.write_text(json.dumps(recs, indent=1))
    return out


H200_CURVE = Path(__file__).resolve().parents[2] / "data/h200/runs/tp1-overlap-graphs.json"


def throughput(factor, benchmark: str, seed: int, runs: int = 2,  # noqa: ANN001
               orders=("overlap", "serial"), variants=("a", "b")) -> list[dict]:
    """Runs of every cell M x shared-expert order x `variant` (which changes nothing), `runs`
    each: the real H200 run of that M, its samples resampled (with replacement) and multiplied by
    `factor(M, order)`."""
    real = {r["config"]["batch_size"]: r for r in json.loads(H200_CURVE.read_text())}
    rng = random.Random(seed)
    out = []
    for M, base in sorted(real.items()):
        for order in orders:
            for v in variants:
                for i in range(runs):
                    samples = [rng.choice(base["metrics"]["tok_s"]["samples"]) * factor(M, order)
                               for _ in base["metrics"]["tok_s"]["samples"]]
                    out.append({"benchmark": benchmark, "hardware": base["hardware"],
                                "config": {"tp": 1, "batch_size": M, "shared_experts": order,
                                           "variant": v},
                                "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                                      "samples": samples}},
                                "idempotency_key": f"{benchmark}:{M}:{order}:{v}:{i}"})
    return out
