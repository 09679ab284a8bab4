"""`perfwarden collect decode`: the built-in TP decode benchmark, one run record per batch size.

Timed trials and profiling are separate passes, so a trace never slows the measured numbers.
Each trial is one tok/s sample: tokens produced / wall time, the device synchronized before and
after, warm-up excluded (spec/metrics.md).
"""
from __future__ import annotations

import faulthandler
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

from .. import env as envinfo
from ..record import determinism, digest, metric
from .config import DecodeConfig, log
from .passes import pass_body, profile_records

KV_LOG_FORMAT = "GPU KV cache size: {tokens:,} tokens"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_threads(tp: int, given: int = 0, cores: int | None = None) -> int:
    """Torch threads per rank on the CPU: `--threads`, else OMP_NUM_THREADS, else one per rank
    when the machine has fewer cores than ranks x 2 (oversubscribed threads make a shared
    machine's runs differ by 2x), else the cores shared out among the ranks."""
    if given > 0:
        return given
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    cores = cores or os.cpu_count() or 1
    return 1 if cores < 2 * tp else max(1, cores // tp)


def run(cfg: DecodeConfig) -> list[dict]:
    """Run every batch size; returns run records (without trace files attached)."""
    import torch

    if cfg.device == "cpu":
        cfg.threads = cpu_threads(cfg.tp, cfg.threads)

    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: no CUDA device is visible")
    if cfg.device == "cuda" and torch.cuda.device_count() < cfg.tp:
        n = torch.cuda.device_count()
        if cfg.cuda_graphs:
            raise RuntimeError(f"--tp {cfg.tp} on {n} GPU(s) shares them over gloo, whose "
                               f"collectives CUDA graphs cannot capture: drop --cuda-graphs, or "
                               f"run on {cfg.tp} GPUs (NCCL, one a rank)")
        cfg.shared_gpus = n
        log(cfg, f"--tp {cfg.tp} on {n} GPU(s): ranks share them round-robin over gloo (a "
                 "functional capture, not a speed figure)")
    if cfg.cuda_graphs and cfg.device != "cuda":
        raise RuntimeError("--cuda-graphs needs --device cuda")
    if cfg.routed_kernel == "resident" and cfg.device != "cuda":
        raise RuntimeError("--routed-kernel resident needs --device cuda")
    # absolute, so the trace paths it names hold wherever the command is run from
    cfg.workdir = str(Path(cfg.workdir or tempfile.mkdtemp(prefix="perfwarden-decode-")).resolve())
    Path(cfg.workdir).mkdir(parents=True, exist_ok=True)
    result_file = Path(cfg.workdir) / ("profile_results.json" if cfg.profile_pass else "results.json")
    started = envinfo.utc_now()
    _spawn(cfg, result_file)
    if cfg.profile_pass:
        return []
    results = json.loads(result_file.read_text())
    records = [_record(cfg, r, started) for r in results]
    if cfg.profile != "none":
        # a PyTorch-profiler pass forked where the ranks were: it starts with torch imported
        profile_records(cfg, records, run if start_method(cfg) == "fork" else None)
    return records


def _spawn(cfg: DecodeConfig, result_file: Path) -> None:
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # started by torchrun
        _worker(int(os.environ["RANK"]), cfg, None, str(result_file))
        return
    if cfg.tp == 1:
        _worker(0, cfg, None, str(result_file))
        return
    import torch.multiprocessing as mp

    port = _free_port()
    try:
        mp.start_processes(_worker, args=(cfg, port, str(result_file)), nprocs=cfg.tp, join=True,
                           start_method=start_method(cfg))
    except mp.ProcessRaisedException as e:  # one line: the rank and its error's last line
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        raise RuntimeError(f"rank {e.error_index}: {lines[-1] if lines else 'failed'}") from None


def start_method(cfg: DecodeConfig) -> str:
    """How the TP ranks start: forked where that is safe, a CPU run of a process with one thread
    whose torch has not touched CUDA (not under nsys, which follows exec'd ranks), so each rank
    starts with torch imported instead of importing it again (about 2 s of CPU a rank); else
    spawned (a forked CUDA context, or a lock held by another thread at the fork, breaks the
    child)."""
    import threading

    import torch

    if (cfg.device == "cpu" and cfg.profile != "nsys" and threading.active_count() == 1
            and not torch.cuda.is_initialized()):
        return "fork"
    return "spawn"


def _worker(rank: int, cfg: DecodeConfig, port: int | None, result_file: str) -> None:
    if cfg.deterministic:  # must precede the first cuBLAS call
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    if cfg.deterministic:
        torch.use_deterministic_algorithms(True)
    import torch.distributed as dist

    from .model import ModelShape, MoEDecoder  # torch: imported by the rank processes alone

    if cfg.profile_pass:
        # a pass that hangs says where: every thread's stack into the pass's log shortly
        # before the watchdog stops it
        faulthandler.dump_traceback_later(max(1.0, cfg.profile_timeout * 0.8), exit=False)
    tp = cfg.tp
    distributed = tp > 1 or "WORLD_SIZE" in os.environ
    device = _join(cfg, rank, port, distributed)
    shape = ModelShape(**cfg.shape) if cfg.shape else (
        ModelShape() if cfg.device == "cuda" else ModelShape.small(cfg.tp))

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if tp > 1:
            dist.barrier()

    results = []
    profiled = set(cfg.profile_batch_sizes or cfg.batch_sizes[:1])
    for M in cfg.batch_sizes:
        if cfg.profile_pass and M not in profiled:
            continue
        model = MoEDecoder(shape, cfg.order, device, tp, rank, M, seed=cfg.seed,
                           extra_work=cfg.extra_work, routed_kernel=cfg.routed_kernel)
        try:
            r = _run_batch(cfg, model, shape, M, rank, device, sync)
        finally:
            # the same ending for the timed and the profile pass: the CUDA graph goes before the
            # next batch size and before the process group (a live graph that captured NCCL
            # collectives makes the communicator's destroy wait forever: the TP + graphs hang)
            model.release()
            del model
            if device.type == "cuda":
                torch.cuda.synchronize(device)
                torch.cuda.empty_cache()
        if r is not None:
            results.append(r)
    if rank == 0 and not cfg.profile_pass:
        Path(result_file).write_text(json.dumps(results))
    if distributed:
        dist.barrier()
        _teardown(cfg, rank)


def _join(cfg: DecodeConfig, rank: int, port: int | None, distributed: bool):
    """This rank's process group (gloo on the CPU, NCCL on CUDA) and device."""
    import torch
    import torch.distributed as dist

    if distributed:
        backend = "nccl" if cfg.device == "cuda" and not cfg.shared_gpus else "gloo"
        if port is not None:
            dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                    world_size=cfg.tp)
        else:
            dist.init_process_group(backend)
    if cfg.device == "cuda":
        index = rank % cfg.shared_gpus if cfg.shared_gpus else rank
        torch.cuda.set_device(index)
        return torch.device("cuda", index)
    torch.set_num_threads(cpu_threads(cfg.tp, cfg.threads))
    return torch.device("cpu")


TEARDOWN_S = 20.0


def _teardown(cfg: DecodeConfig, rank: int) -> None:
    """destroy_process_group, bounded. On two H200s a profile pass of TP2 + CUDA graphs (a process
    that captured NCCL all-reduces into a graph and replayed it) never returned from it: both
    ranks waited in destroy_process_group (their stacks, from the pass's faulthandler dump),
    with the graph already released and the trace complete. Everything this process owes is
    written before this point, so past TEARDOWN_S the rank exits without it."""
    import threading

    import torch.distributed as dist

    done = threading.Event()

    def destroy() -> None:
        dist.destroy_process_group()
        done.set()

    threading.Thread(target=destroy, daemon=True).start()
    if not done.wait(TEARDOWN_S):
        print(f"rank {rank}: destroy_process_group did not return in {TEARDOWN_S:g} s; exiting "
              "without it (results and traces are already written)", file=sys.stderr, flush=True)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(0)


def _run_batch(cfg: DecodeConfig, model, shape, M: int, rank: int, device, sync) -> dict | None:
    """Warm up, then the timed trials (one tok/s sample each), or in a profile pass the profiled
    steps. Returns the batch size's results (None in a profile pass)."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(cfg.seed)
    first = torch.randint(0, shape.vocab, (M,), generator=g)
    model.reset(first)
    if cfg.cuda_graphs:
        model.capture_graph()
    with torch.inference_mode():
        for i in range(cfg.warmup):
            model.step(i)
    sync()
    plant = None
    if cfg.plant_pct:
        if device.type != "cuda":
            raise RuntimeError("--plant-slowdown-pct needs --device cuda")
        plant = model.calibrate_plant(cfg.plant_pct, sync)
        if rank == 0:
            log(cfg, f"[M={M}] planted {plant['plant_us']:.1f} us per step "
                      f"({cfg.plant_pct}% of {plant['step_us']:.1f} us)")
    kv_tokens, kv_bytes = _kv_capacity(cfg, shape, device, cfg.tp)
    if rank == 0:
        log(cfg, f"[M={M}] " + KV_LOG_FORMAT.format(tokens=kv_tokens))
    if cfg.profile_pass:
        pass_body(cfg, model, sync, M, rank)
        return None
    trials = []
    for t in range(cfg.trials):
        model.reset(first)
        out = torch.empty(cfg.steps, M, dtype=torch.long, device=device)
        sync()
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.inference_mode():
            for s in range(cfg.steps):
                out[s] = model.step(s)
        sync()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        tok = out.cpu().numpy().tobytes()
        trial = {"tok_s": M * cfg.steps / wall, "wall_s": wall, "digest": digest(tok)}
        if device.type == "cpu" and cpu > 0:  # the rank's CPU time: what the work cost,
            trial["cpu_s"] = cpu  # whatever else shares the cores
            trial["cpu_tok_s"] = M * cfg.steps / cpu
        if rank == 0:
            state = envinfo.gpu_state(device.index or 0) if device.type == "cuda" else None
            if state:
                trial["gpu"] = state
            log(cfg, f"[M={M}] trial {t + 1}/{cfg.trials}: {trial['tok_s']:.2f} tok/s")
        trials.append(trial)
    res = {"batch_size": M, "trials": trials, "kv_capacity_tokens": kv_tokens,
           "kv_bytes_available": kv_bytes, "shape": shape.as_config(),
           "kv_bytes_per_token": shape.kv_bytes_per_token(cfg.tp), "plant": plant}
    if model.resident is not None:
        res["routed_kernel"] = model.resident.compiled
    return res


def _kv_capacity(cfg: DecodeConfig, shape, device, tp: int) -> tuple[int, int]:
    """floor(bytes available for the KV cache / bytes per token), minimum over ranks."""
    import torch
    import torch.distributed as dist

    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        available = int(total * cfg.gpu_memory_utilization) - (total - free)
    else:
        available = int(cfg.kv_cache_gib * (1 << 30))
    tokens = max(0, available) // shape.kv_bytes_per_token(tp)
    if tp > 1:
        t = torch.tensor([tokens], dtype=torch.long, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        tokens = int(t.item())
    return int(tokens), int(available)


def _record(cfg: DecodeConfig, r: dict, started: str) -> dict:
    trials = r["trials"]
    digests = [t["digest"] for t in trials]
    config = {"tp": cfg.tp, "batch_size": r["batch_size"], "shared_experts": cfg.order,
              "cuda_graphs": cfg.cuda_graphs, "device": cfg.device, "steps": cfg.steps,
              "layers": r["shape"]["layers"], "hidden": r["shape"]["hidden"],
              "experts": r["shape"]["experts"], "top_k": r["shape"]["top_k"],
              "dtype": r["shape"]["dtype"]}
    rec = {"benchmark": cfg.benchmark, "config": config,
           "hardware": envinfo.hardware(cfg.device, cfg.shared_gpus or cfg.tp),
           "environment": envinfo.environment(),
           "started_at": started,
           "metrics": {"tok_s": metric("tok_s", [t["tok_s"] for t in trials]),
                       **({"cpu_tok_s": metric("cpu_tok_s", [t["cpu_tok_s"] for t in trials])}
                          if all("cpu_tok_s" in t for t in trials) else {}),
                       "kv_capacity_tokens": metric("kv_capacity_tokens",
                                                    [r["kv_capacity_tokens"]])},
           "determinism": determinism(digests),
           "trials": [{k: v for k, v in t.items() if k != "digest"} for t in trials],
           "kv_cache": {"bytes_available": r["kv_bytes_available"],
                        "bytes_per_token": r["kv_bytes_per_token"], "derived": True}}
    # a planted slowdown is a change under test, not a configuration: it stays out of `config`
    # so the planted runs share the series of the code they are compared against
    if cfg.deterministic:
        config["deterministic"] = True
    if cfg.shared_gpus:  # its own series: never judged against one GPU a rank
        config["gpu_sharing"] = (f"{cfg.tp} ranks round-robin on {cfg.shared_gpus} GPU(s), gloo: "
                                 "a functional capture, not a speed figure")
    if cfg.device == "cpu":  # threads per rank change the workload on a CPU
        config["threads"] = cfg.threads
    if cfg.routed_kernel != "bmm":  # the batched-GEMM default keeps the series of earlier runs
        config["routed_kernel"] = cfg.routed_kernel
        if r.get("routed_kernel"):
            rec["routed_kernel"] = r["routed_kernel"]
    if r.get("plant") or cfg.extra_work:
        rec["plant"] = {**(r.get("plant") or {}), "pct": cfg.plant_pct or None,
                        "extra_work": cfg.extra_work or None}
    rec.update(envinfo.git_identity())
    if cfg.label:
        rec["label"] = cfg.label
    return rec
