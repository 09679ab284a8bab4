"""On one GPU: the resident-grid routed-expert kernel against the batched-GEMM path (same numbers
up to bf16 rounding), its compiled resources, and a quick in-process look at what `late` costs
against `overlap` with CUDA graphs for each routed kernel (alternating blocks of steps). The
decision-grade comparison is the interleaved experiment in h200_resident.sh."""
from __future__ import annotations

import json
import sys
import time

import torch

from collectors.bench.model import ModelShape, MoEDecoder


def main() -> int:
    dev = torch.device("cuda", 0)
    shape = ModelShape()
    report: dict = {"gpu": torch.cuda.get_device_name(dev)}
    g = torch.Generator(device="cpu").manual_seed(1)
    for M in (1, 8):
        m = MoEDecoder(shape, "overlap", dev, 1, 0, M, routed_kernel="resident")
        p = m.layers[0]
        x = (torch.randn(M, shape.hidden, generator=g) * 0.5).to(dev, torch.bfloat16)
        with torch.inference_mode():
            w = m._router(p, x)
            ref = (torch.bmm(torch.nn.functional.silu(torch.bmm(
                x.unsqueeze(0).expand(shape.experts, -1, -1), p["e_up"])), p["e_down"]) * w).sum(0)
            out = m._routed(p, x, w)
            torch.cuda.synchronize(dev)
        err = float((out.float() - ref.float()).abs().max() / ref.float().abs().max())
        report[f"M{M}_max_rel_err"] = err
        assert m.resident is not None
        report["compiled"] = m.resident.compiled
        del m
    steps, blocks = 200, 6
    for rk in ("bmm", "resident"):
        models = {o: MoEDecoder(shape, o, dev, 1, 0, 1, routed_kernel=rk) for o in ("overlap", "late")}
        for mdl in models.values():
            mdl.reset(torch.zeros(1, dtype=torch.long))
            mdl.capture_graph()
            for i in range(20):
                mdl.step(i)
        torch.cuda.synchronize(dev)
        times: dict[str, list[float]] = {"overlap": [], "late": []}
        for b in range(blocks):
            for o in (("overlap", "late") if b % 2 == 0 else ("late", "overlap")):
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                for i in range(steps):
                    models[o].step(i)
                torch.cuda.synchronize(dev)
                times[o].append((time.perf_counter() - t0) / steps * 1e6)
        ov, la = sorted(times["overlap"])[blocks // 2], sorted(times["late"])[blocks // 2]
        report[rk] = {"overlap_step_us_median": ov, "late_step_us_median": la,
                      "late_vs_overlap_pct": (la / ov - 1) * 100, "blocks": times}
        for mdl in models.values():
            mdl.release()
        del models
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
