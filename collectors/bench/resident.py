"""Routed experts as one resident-grid (persistent) kernel, as MoE engines run them.

One program (CTA) per SM stays resident for the whole routed-expert phase: every program first
computes its share of the up projections (silu(x @ up[e]) * routing weight), then all programs
meet at a grid-wide barrier (an atomic counter in global memory), then each computes its share of
the down projection summed over experts. The barrier needs every program to be resident at once:
when work on another stream holds SMs as the kernel starts, the programs that found no room start
late and every other program spins at the barrier until they arrive. That is the shared-expert PR's
hazard.

The kernel takes much of an SM's shared memory (deep operand pipelines), so it does not share an SM
with other kernels' blocks, as production persistent kernels do not.

Triton is imported only here, when `--routed-kernel resident` is asked for.
"""
from __future__ import annotations

from typing import Any

import torch

BM = 16  # rows per tile: decode batches are small; tl.dot needs at least 16
BN1, BK1 = 32, 2048  # up projection tile: 32 columns, reduction chunks up to the whole hidden size
# (as much shared memory as fits one SM, as production persistent kernels take)
BN2, BK2 = 16, 128  # down projection tile and reduction chunk
# 32 warps: 1,024 threads whose registers (capped at 64 each) fill an SM's 64K register file, so no
# other kernel's block fits beside one of these. Measured on an H200 with fewer warps (8 warps, 167
# registers; 16 warps, 90 registers): the shared experts' blocks ran in the room left over, and
# `late` cost nothing against `overlap`.
NUM_WARPS = 32


def _build() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def resident_moe_kernel(x_ptr, w_ptr, up_ptr, down_ptr, h_ptr, out_ptr, bar_ptr, M,
                            H: tl.constexpr, INTER: tl.constexpr, E: tl.constexpr,
                            BM: tl.constexpr, BN1: tl.constexpr, BK1: tl.constexpr,
                            BN2: tl.constexpr, BK2: tl.constexpr, PHASE: tl.constexpr):
        # PHASE 0: both phases with the grid barrier between them (the resident kernel);
        # PHASE 1 / 2: one phase per launch (no barrier; for the Triton interpreter in tests)
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        rm = tl.arange(0, BM)
        mmask = rm < M
        if PHASE != 2:
            nb1: tl.constexpr = INTER // BN1
            for t in range(pid, E * nb1, nprog):
                e = t // nb1
                rn = (t % nb1) * BN1 + tl.arange(0, BN1)
                acc = tl.zeros((BM, BN1), dtype=tl.float32)
                for k0 in range(0, H, BK1):
                    rk = k0 + tl.arange(0, BK1)
                    a = tl.load(x_ptr + rm[:, None] * H + rk[None, :], mask=mmask[:, None], other=0.0)
                    b = tl.load(up_ptr + e * H * INTER + rk[:, None] * INTER + rn[None, :])
                    acc += tl.dot(a, b)
                wt = tl.load(w_ptr + e * M + rm, mask=mmask, other=0.0).to(tl.float32)
                hv = acc * tl.sigmoid(acc) * wt[:, None]
                tl.store(h_ptr + e * BM * INTER + rm[:, None] * INTER + rn[None, :],
                         hv.to(h_ptr.dtype.element_ty))
        if PHASE == 0:
            tl.debug_barrier()  # every thread of this program has stored its part
            tl.atomic_add(bar_ptr, 1, sem="release", scope="gpu")
            arrived = tl.atomic_add(bar_ptr, 0, sem="acquire", scope="gpu")
            while arrived < nprog:
                arrived = tl.atomic_add(bar_ptr, 0, sem="acquire", scope="gpu")
            tl.debug_barrier()
        if PHASE != 1:
            for t in range(pid, H // BN2, nprog):
                rn = t * BN2 + tl.arange(0, BN2)
                acc = tl.zeros((BM, BN2), dtype=tl.float32)
                for e in range(E):
                    for k0 in range(0, INTER, BK2):
                        rk = k0 + tl.arange(0, BK2)
                        a = tl.load(h_ptr + e * BM * INTER + rm[:, None] * INTER + rk[None, :],
                                    cache_modifier=".cg")  # written by other SMs: skip L1
                        b = tl.load(down_ptr + e * INTER * H + rk[:, None] * H + rn[None, :])
                        acc += tl.dot(a, b)
                tl.store(out_ptr + rm[:, None] * H + rn[None, :], acc.to(out_ptr.dtype.element_ty),
                         mask=mmask[:, None])

    return resident_moe_kernel


_KERNEL: Any = None


def kernel() -> Any:
    global _KERNEL
    if _KERNEL is None:
        try:
            _KERNEL = _build()
        except ImportError:
            raise RuntimeError("--routed-kernel resident needs Triton (pip install triton)") from None
    return _KERNEL


class ResidentMoE:
    """The routed experts of one rank as a resident-grid kernel; `__call__` matches the batched
    GEMM path: silu(x @ up[e]) @ down[e], weighted by the router and summed over experts."""

    def __init__(self, experts: int, hidden: int, inter: int, M: int, layers: int,
                 device: torch.device, dtype: torch.dtype, interpret: bool = False):
        if M > BM:
            raise ValueError(f"--routed-kernel resident handles batch sizes up to {BM}, not {M}")
        self.bk1 = min(BK1, hidden)
        if inter % BN1 or inter % BK2 or hidden % self.bk1 or hidden % BN2 or hidden & (hidden - 1):
            raise ValueError(f"--routed-kernel resident: hidden size {hidden} must be a power of 2 "
                             f"and expert width per rank {inter} a multiple of {max(BN1, BK2)}")
        self.E, self.H, self.I, self.M = experts, hidden, inter, M
        self.device = device
        self.interpret = interpret or device.type != "cuda"
        self.h = torch.zeros(experts, BM, inter, device=device, dtype=dtype)
        self.bars = torch.zeros(layers, dtype=torch.int32, device=device)
        if device.type == "cuda":
            self.grid = torch.cuda.get_device_properties(device).multi_processor_count
        else:
            self.grid = 4
        self.compiled: dict[str, int] = {}

    def __call__(self, layer: int, x: torch.Tensor, weights: torch.Tensor, up: torch.Tensor,
                 down: torch.Tensor) -> torch.Tensor:
        k = kernel()
        out = torch.empty(self.M, self.H, device=self.device, dtype=x.dtype)
        w = weights.reshape(self.E, self.M).contiguous()
        x = x.contiguous()
        args = (x, w, up, down, self.h, out)
        consts = dict(H=self.H, INTER=self.I, E=self.E, BM=BM, BN1=BN1, BK1=self.bk1, BN2=BN2,
                      BK2=BK2)
        if self.interpret:  # no grid barrier when programs run one after another
            bar = self.bars[layer:layer + 1]
            k[(self.grid,)](*args, bar, self.M, PHASE=1, **consts)
            k[(self.grid,)](*args, bar, self.M, PHASE=2, **consts)
            return out
        bar = self.bars[layer:layer + 1]
        bar.zero_()  # a memset node in a CUDA graph: every replay starts the count at 0
        if self.compiled:
            consts["BK1"] = self.compiled["bk1"]
            k[(self.grid,)](*args, bar, self.M, PHASE=0, num_warps=NUM_WARPS,
                            num_stages=self.compiled["num_stages"], **consts)
            return out
        self._first_launch(k, args, bar, consts)
        return out

    def _first_launch(self, k, args, bar, consts) -> None:
        """The widest reduction chunk (most shared memory) that fits one SM: Triton versions
        differ in how much they stage, so the fit is found by launching."""
        from triton.runtime.errors import OutOfResources

        last: Exception | None = None
        for bk1, stages in ((self.bk1, 1), (self.bk1 // 2, 2), (self.bk1 // 2, 1),
                            (self.bk1 // 4, 2), (self.bk1 // 8, 2)):
            if bk1 < 16:
                break
            consts["BK1"] = bk1
            try:
                compiled = k[(self.grid,)](*args, bar, self.M, PHASE=0, num_warps=NUM_WARPS,
                                           num_stages=stages, **consts)
            except OutOfResources as e:
                last = e
                continue
            self.compiled = {"grid": self.grid, "num_warps": NUM_WARPS, "bk1": bk1, "num_stages": stages,
                             "shared_bytes": int(getattr(compiled.metadata, "shared", 0) or 0),
                             "registers": int(getattr(compiled, "n_regs", 0) or 0)}
            return
        raise RuntimeError(f"--routed-kernel resident: no tile fits one SM ({last})")
