"""A toy MoE decode step that names its ranges and kernels the way vLLM and SGLang do.

Standalone (torch + Triton, nothing of perfwarden), so the traces it writes are engine-like input
for `perfwarden analyze`, not the collector's own. One process = one capture:

    python3 engine_moe_step.py --order joined|unjoined|serial --mode eager|graphs \
        --profiler torch|nsys --names vllm|sglang --out FILE

Per layer: attention stand-in (main stream) -> fork: shared experts on an auxiliary stream
(`joined`, `unjoined`) or on the main stream (`serial`: no auxiliary stream at all), router gate
on the main stream -> routed experts (`moe_align_block_size_kernel`, `fused_moe_kernel`, Triton,
launched inside a `routed_experts` range). `joined`: the main stream waits for the shared experts
before the routed experts (safe). `unjoined`: it waits only after them (the routed experts may run
beside the shared experts: the hazard).

Steps: one prefill step first (SGLang `step[EXTEND bs=B toks=T]`, vLLM
`execute_T_context_B(...)_generation_0(...)`), then decode steps (`step[DECODE bs=B]`,
`execute_B_context_0(...)_generation_B(...)`). With `--mode graphs` each decode step replays one
CUDA graph of the layer stack, and one eager copy of the decode step runs first inside
`eager_reference_step_0` (what the graph replays cannot show: host ranges and stream waits).
The torch profiler runs with `enable_cuda_sync_events=True`.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil

import torch
import triton
import triton.language as tl


@triton.jit
def moe_align_block_size_kernel(topk_ids, counts, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    e = tl.load(topk_ids + i, mask=i < n, other=0)
    tl.atomic_add(counts + e, 1, mask=i < n)


@triton.jit
def fused_moe_kernel(x, w, topk_ids, topk_w, out, K, N, top_k,
                     BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    pair = tl.program_id(0)  # (token, k) pair
    nb = tl.program_id(1)
    tok = pair // top_k
    e = tl.load(topk_ids + pair)
    g = tl.load(topk_w + pair)
    cols = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        xv = tl.load(x + tok * K + ks).to(tl.float32)
        wv = tl.load(w + e * K * N + ks[:, None] * N + cols[None, :]).to(tl.float32)
        acc += tl.sum(xv[:, None] * wv, axis=0)
    tl.atomic_add(out + tok * N + cols, acc * g)


class ToyMoE:
    def __init__(self, args, dev):
        torch.manual_seed(0)
        H, E, I = args.hidden, args.experts, args.inter  # noqa: E741
        self.a = args
        rnd = lambda *s: torch.randn(*s, device=dev, dtype=torch.bfloat16) * 0.02  # noqa: E731
        self.attn = [rnd(H, H) for _ in range(args.layers)]
        self.gate = [rnd(H, E) for _ in range(args.layers)]
        self.sh_up = [rnd(H, 2 * I) for _ in range(args.layers)]
        self.sh_down = [rnd(I, H) for _ in range(args.layers)]
        self.w = [rnd(E, H, H) for _ in range(args.layers)]
        self.counts = torch.zeros(E, dtype=torch.int32, device=dev)
        self.aux = torch.cuda.Stream() if args.order != "serial" else None

    def shared(self, li, h):
        u = h @ self.sh_up[li]
        a, b = u.chunk(2, dim=-1)
        return (torch.nn.functional.silu(a) * b) @ self.sh_down[li]

    def routed(self, li, h, ids, wts):
        B, H = h.shape
        out = torch.zeros(B, H, dtype=torch.float32, device=h.device)
        with torch.profiler.record_function("routed_experts"):
            torch.cuda.nvtx.range_push("routed_experts")
            self.counts.zero_()
            flat = ids.reshape(-1).to(torch.int32).contiguous()
            moe_align_block_size_kernel[(triton.cdiv(flat.numel(), 128),)](
                flat, self.counts, flat.numel(), BLOCK=128)
            fused_moe_kernel[(flat.numel(), H // 128)](
                h.contiguous(), self.w[li], flat, wts.reshape(-1).float().contiguous(), out,
                H, H, self.a.top_k, BLOCK_K=64, BLOCK_N=128)
            torch.cuda.nvtx.range_pop()
        return out.to(h.dtype)

    def layers(self, x):
        main = torch.cuda.current_stream()
        for li in range(self.a.layers):
            h = x @ self.attn[li]
            if self.aux is None:
                s = self.shared(li, h)
                logits = h @ self.gate[li]
                wts, ids = torch.topk(torch.softmax(logits.float(), -1), self.a.top_k, -1)
                r = self.routed(li, h, ids, wts)
            else:
                self.aux.wait_stream(main)
                with torch.cuda.stream(self.aux):
                    s = self.shared(li, h)
                logits = h @ self.gate[li]
                wts, ids = torch.topk(torch.softmax(logits.float(), -1), self.a.top_k, -1)
                if self.a.order == "joined":
                    main.wait_stream(self.aux)
                r = self.routed(li, h, ids, wts)
                if self.a.order == "unjoined":
                    main.wait_stream(self.aux)
            x = x + s + r
        return x


def rng(name: str):
    class R:
        def __enter__(self):
            self.rf = torch.profiler.record_function(name)
            self.rf.__enter__()
            torch.cuda.nvtx.range_push(name)

        def __exit__(self, *exc):
            torch.cuda.nvtx.range_pop()
            self.rf.__exit__(*exc)
    return R()


def names(kind: str, bs: int, ctx: int):
    if kind == "sglang":
        return f"step[EXTEND bs={bs} toks={bs * ctx}]", f"step[DECODE bs={bs}]"
    return (f"execute_{bs * ctx}_context_{bs}(sq{bs * ctx}sk{bs * ctx})_generation_0(sq0sk0)",
            f"execute_{bs}_context_0(sq0sk0)_generation_{bs}(sq{bs}sk{bs * ctx})")


def run(args):
    dev = torch.device("cuda")
    m = ToyMoE(args, dev)
    B, H = args.batch, args.hidden
    x_pref = torch.randn(B * 16, H, device=dev, dtype=torch.bfloat16)
    x = torch.randn(B, H, device=dev, dtype=torch.bfloat16)
    prefill_name, decode_name = names(args.names, B, 16)
    with torch.inference_mode():
        for _ in range(3):  # warm-up: Triton compiles, cuBLAS picks
            m.layers(x_pref)
            m.layers(x)
        graph = None
        if args.mode == "graphs":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                m.layers(x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                y_static = m.layers(x)
            graph.replay()
        torch.cuda.synchronize()

        def body():
            torch.cuda.profiler.start()
            with rng(prefill_name):
                m.layers(x_pref)
            if graph is not None:
                with rng("eager_reference_step_0"):
                    m.layers(x)
            for _ in range(args.steps):
                with rng(decode_name):
                    if graph is not None:
                        graph.replay()
                        y_static.sum()
                    else:
                        m.layers(x).sum()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()

        if args.profiler == "torch":
            from torch.profiler import ProfilerActivity, profile
            cfg = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                         experimental_config=cfg) as prof:
                body()
            raw = args.out[:-3] if args.out.endswith(".gz") else args.out
            prof.export_chrome_trace(raw)
            if raw != args.out:
                with open(raw, "rb") as f, gzip.open(args.out, "wb") as g:
                    shutil.copyfileobj(f, g)
                os.unlink(raw)
        else:
            body()
    print(f"{args.names} {args.order} {args.mode} {args.profiler}: done", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--order", choices=["joined", "unjoined", "serial"], required=True)
    p.add_argument("--mode", choices=["eager", "graphs"], default="eager")
    p.add_argument("--profiler", choices=["torch", "nsys"], default="torch")
    p.add_argument("--names", choices=["vllm", "sglang"], default="sglang")
    p.add_argument("--out", default="trace.json.gz")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--inter", type=int, default=4096)
    p.add_argument("--experts", type=int, default=16)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=5)
    run(p.parse_args())


if __name__ == "__main__":
    main()
