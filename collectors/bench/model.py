"""A decode-step workload shaped like the shared-expert PR's MoE model, sharded for tensor
parallelism.

Per layer: attention over a KV cache, shared experts, router top-k, routed experts, and the TP
all-reduce. The shared experts run on an auxiliary CUDA stream in one of the shared-expert PR's
orders:

- ``overlap``: shared experts are submitted on the auxiliary stream *before* the router, and the
  main stream joins the auxiliary stream right before the routed experts (the PR's safe order);
- ``late``: the router runs first, the shared experts are submitted after it and joined only after
  the routed experts, so they run beside the routed-expert kernels (the resident-grid hazard);
- ``serial``: no auxiliary stream; everything on the main stream.

On the CPU there are no streams, so every order computes the same thing serially.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..profile.nvtx import Marker
from .resident import ResidentMoE

ORDERS = ("overlap", "late", "serial")
ROUTED_KERNELS = ("bmm", "resident")


@dataclass
class ModelShape:
    layers: int = 4
    hidden: int = 2048
    heads: int = 16
    kv_heads: int = 4
    head_dim: int = 128
    experts: int = 16
    top_k: int = 2
    expert_inter: int = 1024
    shared_inter: int = 2048
    vocab: int = 8192
    context: int = 1024
    dtype: str = "bfloat16"

    @classmethod
    def small(cls, tp: int = 1) -> ModelShape:
        """For CPU runs: the same structure at a size a 2-core machine runs in seconds; at TP8
        eight heads, so they split over the ranks."""
        return cls(layers=2, hidden=256, heads=max(4, tp), kv_heads=2, head_dim=64, experts=8, top_k=2,
                   expert_inter=256, shared_inter=256, vocab=1024, context=128, dtype="float32")

    def as_config(self) -> dict:
        return asdict(self)

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    def kv_bytes_per_token(self, tp: int) -> int:
        """MHA/GQA: 2 (K and V) * layers * kv heads per rank * head_dim * dtype bytes."""
        kv_per_rank = max(1, self.kv_heads // tp)
        return 2 * self.layers * kv_per_rank * self.head_dim * torch.finfo(self.torch_dtype).bits // 8


class MoEDecoder:
    """Weights and KV cache of one TP rank; `step(tokens)` runs one decode step."""

    def __init__(self, shape: ModelShape, order: str, device: torch.device, tp: int, rank: int,
                 batch_size: int, seed: int = 1234, extra_work: int = 0, routed_kernel: str = "bmm"):
        if order not in ORDERS:
            raise ValueError(f"shared-expert order must be one of {ORDERS}, not {order!r}")
        if routed_kernel not in ROUTED_KERNELS:
            raise ValueError(f"routed kernel must be one of {ROUTED_KERNELS}, not {routed_kernel!r}")
        if shape.heads % tp or shape.experts < shape.top_k or shape.expert_inter % tp \
                or shape.shared_inter % tp:
            raise ValueError(f"model shape does not split over tp={tp}")
        self.shape, self.order, self.device, self.tp, self.rank = shape, order, device, tp, rank
        self.M = batch_size
        self.extra_work = extra_work
        dt = shape.torch_dtype
        # Same weights on every run of a device type. A GPU draws them itself: drawing them on the
        # CPU and copying them over took most of an arm process's start-up (3.7 s of 9 s on an H200).
        gen_on = device if device.type == "cuda" else torch.device("cpu")
        g = torch.Generator(device=gen_on).manual_seed(seed)

        def w(*dims, scale=None):
            t = torch.randn(*dims, generator=g, dtype=torch.float32, device=gen_on)
            t *= scale if scale is not None else 1.0 / math.sqrt(dims[-2] if len(dims) > 1 else 1)
            return t.to(device=device, dtype=dt)

        H, hd = shape.hidden, shape.head_dim
        self.heads_local = shape.heads // tp
        self.kv_local = max(1, shape.kv_heads // tp)
        L = shape.layers
        # Replicated weights come first from the shared seed; each rank's shards then come from
        # its own seed (the full tensors are never built).
        self.embed = w(shape.vocab, H, scale=0.02)
        self.lm_head = w(H, shape.vocab)
        g.manual_seed(seed * 1000 + rank + 1)
        self.layers = []
        for li in range(L):
            self.layers.append({"index": li,
                "wq": w(H, self.heads_local * hd), "wk": w(H, self.kv_local * hd),
                "wv": w(H, self.kv_local * hd), "wo": w(self.heads_local * hd, H),
                "router": w(H, shape.experts),
                "s_up": w(H, shape.shared_inter // tp), "s_down": w(shape.shared_inter // tp, H),
                "e_up": w(shape.experts, H, shape.expert_inter // tp),
                "e_down": w(shape.experts, shape.expert_inter // tp, H),
                "k_cache": w(batch_size, self.kv_local, shape.context, hd, scale=1.0),
                "v_cache": w(batch_size, self.kv_local, shape.context, hd, scale=1.0),
            })
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.aux = torch.cuda.Stream(device=device) if device.type == "cuda" and order != "serial" else None
        self.marker = Marker(device)
        self.tokens = torch.zeros(batch_size, dtype=torch.long, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self._out: torch.Tensor | None = None
        self.plant_cycles = 0  # planted slowdown: a spin kernel of known length per step
        self.resident = None
        if routed_kernel == "resident":
            self.resident = ResidentMoE(shape.experts, H, shape.expert_inter // tp, batch_size, L,
                                        device, dt)
        # the caches as they start, so every repeat decodes from the same state (determinism)
        self._initial = [(p["k_cache"].clone(), p["v_cache"].clone()) for p in self.layers]

    def release(self) -> None:
        """Drop the CUDA graph before the process group goes: NCCL's communicator destroy waits
        for the graphs that captured its collectives, so a live graph there never returns."""
        self.graph = None
        self._out = None

    # --- one layer -----------------------------------------------------------------------
    def _all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        if self.tp > 1:
            with self.marker.range("allreduce"):
                dist.all_reduce(x)
        return x

    def _attention(self, p: dict, x: torch.Tensor) -> torch.Tensor:
        s, M, hd = self.shape, self.M, self.shape.head_dim
        q = (x @ p["wq"]).view(M, self.heads_local, 1, hd)
        k = (x @ p["wk"]).view(M, self.kv_local, 1, hd)
        v = (x @ p["wv"]).view(M, self.kv_local, 1, hd)
        slot = self.pos % s.context
        p["k_cache"].index_copy_(2, slot, k)
        p["v_cache"].index_copy_(2, slot, v)
        o = F.scaled_dot_product_attention(q, p["k_cache"], p["v_cache"],
                                           enable_gqa=self.heads_local != self.kv_local)
        return self._all_reduce(o.reshape(M, self.heads_local * hd) @ p["wo"])

    def _shared(self, p: dict, x: torch.Tensor) -> torch.Tensor:
        with self.marker.range("shared_experts"):
            out = F.silu(x @ p["s_up"]) @ p["s_down"]
            for _ in range(self.extra_work):  # planted slowdown of known cost (noise studies)
                out = out + 0.0 * (F.silu(x @ p["s_up"]) @ p["s_down"])
            return out

    def _router(self, p: dict, x: torch.Tensor) -> torch.Tensor:
        with self.marker.range("router"):
            logits = (x @ p["router"]).float()
            top_w, top_i = torch.topk(torch.softmax(logits, dim=-1), self.shape.top_k, dim=-1)
            weights = torch.zeros_like(logits).scatter_(1, top_i, top_w / top_w.sum(-1, keepdim=True))
            return weights.to(x.dtype).t().unsqueeze(-1)  # [E, M, 1]

    def _routed(self, p: dict, x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        with self.marker.range("routed_experts"):
            if self.resident is not None:
                return self.resident(p["index"], x, weights, p["e_up"], p["e_down"])
            xe = x.unsqueeze(0).expand(self.shape.experts, -1, -1)
            h = F.silu(torch.bmm(xe, p["e_up"]))
            return (torch.bmm(h, p["e_down"]) * weights).sum(0)

    def _moe(self, p: dict, x: torch.Tensor) -> torch.Tensor:
        aux = self.aux
        if aux is None:
            shared = self._shared(p, x)
            weights = self._router(p, x)
            routed = self._routed(p, x, weights)
            return self._all_reduce(routed + shared)
        main = torch.cuda.current_stream(self.device)
        if self.order == "overlap":
            aux.wait_stream(main)
            with torch.cuda.stream(aux):
                shared = self._shared(p, x)
            weights = self._router(p, x)
            main.wait_stream(aux)  # join right before the routed-expert launch
            routed = self._routed(p, x, weights)
        else:  # late
            weights = self._router(p, x)
            aux.wait_stream(main)
            with torch.cuda.stream(aux):
                shared = self._shared(p, x)
            routed = self._routed(p, x, weights)
            main.wait_stream(aux)
        if not torch.cuda.is_current_stream_capturing():
            shared.record_stream(main)
        return self._all_reduce(routed + shared)

    def _forward(self) -> torch.Tensor:
        x = self.embed[self.tokens]
        for i, p in enumerate(self.layers):
            with self.marker.range(f"layer_{i}"):
                with self.marker.range("attention"):
                    x = x + self._attention(p, x)
                x = x + self._moe(p, x)
        logits = (x @ self.lm_head).float()  # lm_head is replicated: same logits on every rank
        nxt = torch.argmax(logits, dim=-1)
        self.tokens.copy_(nxt)
        self.pos += 1
        return nxt

    # --- public --------------------------------------------------------------------------
    def reset(self, first_tokens: torch.Tensor) -> None:
        self.tokens.copy_(first_tokens.to(self.device))
        self.pos.zero_()
        for p, (k, v) in zip(self.layers, self._initial):
            p["k_cache"].copy_(k)
            p["v_cache"].copy_(v)

    def capture_graph(self, warmup: int = 3) -> None:
        """Capture one decode step into a CUDA graph (replayed by `step`), as engines do."""
        s = torch.cuda.Stream(device=self.device)
        s.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(s):
            for _ in range(warmup):
                self._forward()
        torch.cuda.current_stream(self.device).wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._out = self._forward()
        self.graph = graph

    def forward_eager(self) -> torch.Tensor:
        """One step launched kernel by kernel, even when a graph is captured."""
        return self._forward()

    def step(self, index: int) -> torch.Tensor:
        with self.marker.range(f"decode_step_{index}"):
            if self.graph is not None and self._out is not None:
                self.graph.replay()
                out = self._out
            else:
                out = self._forward()
            if self.plant_cycles:
                torch.cuda._sleep(self.plant_cycles)
            return out

    def calibrate_plant(self, pct: float, sync, steps: int = 30) -> dict:
        """Plant a slowdown of `pct` percent of the step time: time the step, time the spin
        kernel, and size the spin so its cost per step is known."""
        self.plant_cycles = 0
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            self.step(i)
        sync()
        step_s = (time.perf_counter() - t0) / steps
        probe = 10_000_000
        torch.cuda._sleep(1000)
        sync()
        t0 = time.perf_counter()
        torch.cuda._sleep(probe)
        sync()
        s_per_cycle = (time.perf_counter() - t0) / probe
        self.plant_cycles = max(1, int(step_s * pct / 100.0 / s_per_cycle))
        return {"step_us": step_s * 1e6, "plant_us": self.plant_cycles * s_per_cycle * 1e6,
                "plant_cycles": self.plant_cycles}
