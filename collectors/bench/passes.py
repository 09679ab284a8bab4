"""The decode benchmark's profile passes: one process per profiled batch size, under nsys or the
PyTorch profiler (collectors/profile/), each under the watchdog; its traces analyzed into the
record. The timed trials never run under a profiler. A PyTorch-profiler pass is forked from the
benchmark's process where its ranks would be (decode.start_method: a CPU run of one thread), so it
starts with torch imported; else (nsys, CUDA) it is a new process."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..profile.nsys import capture_command, export_sqlite
from ..profile.torch import torch_trace
from ..profile.watchdog import run_watched
from ..record import metric
from ..traces import Options, analyze_files
from ..traces.representative import warnings_for
from .config import DecodeConfig, log

PROFILE_HANG_ENV = "PERFWARDEN_TEST_HANG_PROFILE"  # test hook: the profile pass hangs
REFERENCE_RANGE = "eager_reference_step"  # eager launches of the graph's step, in a profile pass
REFERENCE_STEPS = 2


def pass_body(cfg: DecodeConfig, model, sync, M: int, rank: int) -> None:  # noqa: ANN001
    """Inside a profile pass: the profiled steps, under nsys (cudaProfilerStart/Stop bound the
    capture) or the PyTorch profiler (one Kineto trace per rank)."""
    if os.environ.get(PROFILE_HANG_ENV):  # test hook: a profile pass that never returns
        print(f"[M={M}] {PROFILE_HANG_ENV} set: this profile pass hangs", file=sys.stderr,
              flush=True)
        while True:
            time.sleep(60)
    if cfg.profile_pass == "torch":
        torch_trace(cfg.device, model.marker, lambda: profile_steps(cfg, model, sync),
                    Path(cfg.workdir) / f"trace_M{M}_rank{rank}.json.gz")
    else:
        profile_steps(cfg, model, sync)


def profile_steps(cfg: DecodeConfig, model, sync) -> None:  # noqa: ANN001
    """The profiled steps; on CUDA bounded by cudaProfilerStart/Stop (nsys's capture range)."""
    import torch

    cuda = cfg.device == "cuda"
    sync()
    if cuda:
        torch.cuda.profiler.start()
    with torch.inference_mode():
        if model.graph is not None:
            # the same step launched eagerly first: its NVTX phases name the kernels that the
            # graph replays run without any host range around them
            for i in range(REFERENCE_STEPS):
                with model.marker.range(f"{REFERENCE_RANGE}_{i}"):
                    model.forward_eager()
        for s in range(cfg.profile_steps):
            model.step(s)
    sync()
    if cuda:
        torch.cuda.profiler.stop()


Runner = Callable[[DecodeConfig], object]


def profile_records(cfg: DecodeConfig, records: list[dict], fork: Runner | None = None) -> None:
    """Profile passes: one process per profiled batch size, each under a watchdog; its trace
    set analyzed, the summary into the record. A pass that fails or hangs leaves the timed
    trials and the record as they are, with `profile_error` saying what happened. `fork`: the
    benchmark's own run, called in a forked child for a PyTorch-profiler pass."""

    profiled = set(cfg.profile_batch_sizes or cfg.batch_sizes[:1])
    for rec in records:
        M = rec["config"]["batch_size"]
        if M not in profiled:
            continue
        try:
            files = profile_pass(cfg, M, fork)
        except RuntimeError as e:  # the timed trials stand; the record says what failed
            log(cfg, f"[M={M}] warning: {e}")
            rec["profile_error"] = str(e)
            continue
        log(cfg, f"[M={M}] analyzing {', '.join(p.name for p in files)}")
        try:
            summary = analyze_files(files, Options())
        except ValueError as e:
            rec["profile_error"] = str(e)
            continue
        summary["kernels"] = summary["kernels"][:50]
        summary["warnings"] = summary["warnings"] + warnings_for(summary, rec["config"])
        rec["trace_summary"] = summary
        rec["trace_files"] = [str(p) for p in files]
        for key, value in (("aux_gap_mean_us", summary["aux_gap_mean_us"]),
                           ("aux_idle_per_step_us", summary["aux_idle_per_step_us"])):
            if value is not None:
                rec["metrics"][key] = metric(key, [value])


def profile_pass(cfg: DecodeConfig, M: int, fork: Runner | None = None) -> list[Path]:
    """Run one profile pass (nsys or the PyTorch profiler) in its own process group under a
    watchdog; returns its trace files. With `fork`, a PyTorch-profiler pass is `fork(inner)` in a
    forked child instead of the same config exec'd."""
    kind = cfg.profile
    work = Path(cfg.workdir) / f"{kind}-pass-M{M}"
    # the inner process gets this very config (one batch size, profile-pass mode), so no option
    # is dropped on the way (a deterministic run is profiled with deterministic kernels)
    inner = dataclasses.replace(cfg, batch_sizes=[M], profile_batch_sizes=[M], profile_pass=kind,
                                quiet=True, workdir=str(work))
    cfg_file = Path(cfg.workdir) / f"{kind}_M{M}.config.json"
    cfg_file.write_text(json.dumps(dataclasses.asdict(inner)))
    cmd = [sys.executable, "-m", "collectors", "collect", "decode", "--from-config", str(cfg_file)]
    base = Path(cfg.workdir) / f"nsys_M{M}"
    if kind == "nsys":
        cmd = capture_command(base, cfg.cuda_graphs) + cmd
    label = f"{kind} profile pass M={M}"
    log(cfg, f"[M={M}] {label} ({cfg.profile_steps} steps, watchdog {cfg.profile_timeout:g} s)")
    entry = (lambda: fork(inner)) if fork is not None and kind == "torch" else None
    rc, tail = run_watched(cmd, cfg.profile_timeout, label, Path(cfg.workdir) / f"{kind}_M{M}.log",
                           entry)
    if kind == "torch":
        files = sorted(work.glob(f"trace_M{M}_rank*.json.gz"))
        if len(files) < cfg.tp:
            raise RuntimeError(f"{label} wrote {len(files)} of {cfg.tp} rank traces "
                               f"(exit {rc}): {tail}")
        return files
    rep = base.with_suffix(".nsys-rep")
    if not rep.exists():
        raise RuntimeError(f"nsys profile failed (exit {rc}): {tail}")
    if rc != 0:
        log(cfg, f"[M={M}] nsys exited {rc} but wrote {rep.name}; using it")
    return [export_sqlite(rep, cfg.profile_timeout, f"nsys export M={M}",
                          Path(cfg.workdir) / f"nsys_export_M{M}.log")]
