"""`collect decode` (the built-in TP decode benchmark, and the sweep of its cells, one process
each) and `collect command` (the user's benchmark command, repeated and read)."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..bench.config import DecodeConfig, config_from_file
from ..bench.decode import run
from ..bench.presets import GATE_ARGS, RUNS, apply_preset, cpu_default
from ..engines.ingest import ingest, merge_repeats
from ..engines.logs import looks_like_log
from ..engines.vllm import EngineOutputError
from ..errors import CliError, UsageError
from ..options import ints, orders, positive
from ..profile.nsys import nsys_binary, profile_command
from ..record import write_records
from .emit import emit


def add_collect(sub: argparse._SubParsersAction) -> None:
    collect = sub.add_parser("collect", help="run benchmarks on this node and write run records")
    csub = collect.add_subparsers(dest="collect_cmd", required=True)
    _add_decode(csub)
    _add_command(csub)


def _add_decode(csub: argparse._SubParsersAction) -> None:
    d = csub.add_parser("decode", help="built-in tensor-parallel MoE decode benchmark")
    d.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    d.add_argument("--tp", type=positive(int), default=1)
    d.add_argument("--batch-sizes", type=ints, default=[1], help="the M sweep, e.g. 1,4,7,8")
    d.add_argument("--trials", type=positive(int), default=5)
    d.add_argument("--steps", type=positive(int), default=32, help="timed decode steps per trial")
    d.add_argument("--warmup", type=int, default=8)
    d.add_argument("--layers", type=positive(int))
    d.add_argument("--shared-experts", "--order", dest="order", type=orders, default=["overlap"],
                   help="overlap, late or serial; a comma list sweeps them (one process per "
                        "cell)")
    d.add_argument("--cuda-graphs", action="store_true")
    d.add_argument("--graphs", choices=["on", "off", "both"],
                   help="CUDA graphs on, off, or both (a sweep; --cuda-graphs is --graphs on)")
    d.add_argument("--profile", choices=["none", "nsys", "torch"], default="none")
    d.add_argument("--profile-steps", type=positive(int), default=10)
    d.add_argument("--profile-batch-sizes", type=ints)
    d.add_argument("--profile-timeout", type=positive(float), default=300.0, metavar="S",
                   help="watchdog of each profile pass: past S seconds its process group is "
                        "stopped and the run keeps its timed trials (default 300)")
    d.add_argument("--routed-kernel", choices=["bmm", "resident"], default="bmm",
                   help="routed experts as batched GEMMs, or as one resident-grid (persistent) "
                        "Triton kernel with a grid-wide barrier, one CTA per SM (CUDA)")
    d.add_argument("--shape", help="model shape as JSON (ModelShape fields)")
    d.add_argument("--preset", choices=["cpu"],
                   help="built-in settings: cpu = a CPU runner's gateable shape and one thread "
                        "per rank (collectors/bench/presets.py; flags given beside it win); "
                        "--device cpu without --shape or --layers takes it where its shape splits over --tp")
    d.add_argument("--kv-cache-gib", type=positive(float), default=4.0,
                   help="CPU only: memory granted to the KV cache")
    d.add_argument("--threads", type=positive(int), default=0,
                   help="CPU: torch threads per rank (default: OMP_NUM_THREADS, else one per "
                        "rank when the machine has fewer cores than ranks x 2)")
    d.add_argument("--extra-work", type=int, default=0,
                   help="planted slowdown: extra shared-expert passes per layer")
    d.add_argument("--plant-slowdown-pct", type=positive(float), default=0.0,
                   help="CUDA: add a spin kernel costing this percent of the step time")
    d.add_argument("--deterministic", nargs="?", const="on", default="off",
                   choices=["off", "on", "both"],
                   help="deterministic kernels (torch.use_deterministic_algorithms, fixed cuBLAS "
                        "workspace); `both`: every cell twice, without and with")
    d.add_argument("--seed", type=int, default=1234)
    d.add_argument("--benchmark", default="moe-decode")
    d.add_argument("--label")
    d.add_argument("--out", help="write the run records (JSON list) here")
    d.add_argument("--server", help="post the run records (and traces) to this perfwarden server")
    d.add_argument("--workdir", help="keep traces and intermediate files here (default: a temp dir)")
    d.add_argument("--from-config", help=argparse.SUPPRESS)  # a cell's or the profile pass's config
    d.add_argument("--cell-out", help=argparse.SUPPRESS)  # where a sweep cell writes its records
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(func=cmd_collect_decode)


def _add_command(csub: argparse._SubParsersAction) -> None:
    c = csub.add_parser("command", help="run your own benchmark command N times and read its output")
    c.add_argument("--repeat", type=positive(int), default=3)
    c.add_argument("--result", help="result file the command writes (vllm bench --output-json/"
                                    "--result-filename); read after each repeat")
    c.add_argument("--nsys", action="store_true", help="run the last repeat under nsys")
    c.add_argument("--benchmark")
    c.add_argument("--label")
    c.add_argument("--out")
    c.add_argument("--server")
    c.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ...")
    c.set_defaults(func=cmd_collect_command)


def cmd_collect_decode(args: argparse.Namespace) -> int:
    if args.from_config:
        return _run_from_config(args)

    if not args.preset and args.device == "cpu" and not args.shape and args.layers is None \
            and cpu_default(args.tp):
        args.preset = "cpu"  # a CPU run takes the measured CPU shape unless a shape is given
    if args.preset:
        apply_preset(args)
        if not args.quiet:
            print(f"preset {args.preset}: gate it with {GATE_ARGS[args.preset]}, "
                  f"{RUNS[args.preset]} runs a commit against a baseline of at least 5",
                  file=sys.stderr)
    shape = _shape(args)
    graphs = {"on": [True], "off": [False], "both": [False, True]}[args.graphs] if args.graphs \
        else [args.cuda_graphs]
    if True in graphs and args.device != "cuda":
        raise UsageError("--cuda-graphs (or --graphs on|both) needs --device cuda")
    # without --workdir, a temporary folder that goes when the records are written or posted
    temp = "" if args.workdir else tempfile.mkdtemp(prefix="perfwarden-decode-")
    cfg = _decode_config(args, shape, graphs[0], args.workdir or temp)
    cfg.deterministic = args.deterministic == "on"
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.deterministic]
    cells = [(o, g, d) for d in modes for g in graphs for o in args.order]
    records: list[dict] = []
    try:
        try:
            records = run(cfg) if len(cells) == 1 else _sweep(cfg, cells)
        except (RuntimeError, ValueError) as e:
            raise CliError(str(e)) from None
        _report_decode(records)
        emit(records, args.out, args.server)
    finally:
        if temp:
            _remove_temp(Path(temp), records, args)
    return 0


def _run_from_config(args: argparse.Namespace) -> int:
    """A sweep cell or a profile pass: the parent's config from a file."""

    try:
        records = run(config_from_file(args.from_config))
    except (RuntimeError, ValueError, TypeError) as e:
        raise CliError(str(e)) from None
    if args.cell_out and records:
        write_records(records, args.cell_out)
    return 0


def _shape(args: argparse.Namespace) -> dict:
    shape = {}
    if args.shape:
        try:
            shape = json.loads(args.shape)
        except json.JSONDecodeError as e:
            raise UsageError(f"--shape: not JSON ({e.msg})") from None
    if args.layers:
        from ..bench.model import ModelShape  # torch: only where the layers are given

        base = ModelShape() if args.device == "cuda" else ModelShape.small(args.tp)
        shape = {**base.as_config(), **shape, "layers": args.layers}
    return shape


def _decode_config(args: argparse.Namespace, shape: dict, graphs: bool, workdir: str):
    return DecodeConfig(device=args.device, tp=args.tp, batch_sizes=args.batch_sizes,
                        trials=args.trials, steps=args.steps, warmup=args.warmup,
                        order=args.order[0], cuda_graphs=graphs, profile=args.profile,
                        profile_steps=args.profile_steps,
                        profile_batch_sizes=args.profile_batch_sizes, shape=shape,
                        kv_cache_gib=args.kv_cache_gib, extra_work=args.extra_work, seed=args.seed,
                        threads=args.threads if args.device == "cpu" else 0,
                        plant_pct=args.plant_slowdown_pct, workdir=workdir,
                        benchmark=args.benchmark, label=args.label,
                        profile_timeout=args.profile_timeout, routed_kernel=args.routed_kernel,
                        quiet=args.quiet)


def _remove_temp(work: Path, records: list[dict], args: argparse.Namespace) -> None:
    """The temporary folder goes, unless its traces are all that the printed records name."""
    import shutil

    if not args.out and not args.server and any(r.get("trace_files") for r in records):
        print(f"traces kept in {work} (give --out or --workdir to keep them elsewhere)",
              file=sys.stderr)
        return
    shutil.rmtree(work, ignore_errors=True)


def _report_decode(records: list[dict]) -> None:
    for r in records:
        s = r["metrics"]["tok_s"]["samples"]
        print(f"M={r['config']['batch_size']}: tok/s mean {sum(s) / len(s):.2f} over {len(s)} "
              f"trials, KV cache {r['metrics']['kv_capacity_tokens']['samples'][0]:,} tokens, "
              f"{r['determinism']['identical']}/{r['determinism']['repeats']} bitwise identical",
              file=sys.stderr)


def _sweep(cfg, cells: list[tuple[str, bool, bool]]) -> list[dict]:  # noqa: ANN001 - DecodeConfig
    """A factorial sweep (shared-expert order x CUDA graphs x deterministic mode, beside the
    batch sizes): one process per cell, each running this very config with its cell's settings.
    With a profiler and no --profile-batch-sizes, every batch size of every cell is profiled
    (the traces that tell the cells apart), each pass bounded by --profile-steps."""
    import dataclasses

    work = Path(cfg.workdir or tempfile.mkdtemp(prefix="perfwarden-sweep-"))
    work.mkdir(parents=True, exist_ok=True)
    records: list[dict] = []
    profiled = cfg.profile_batch_sizes or (cfg.batch_sizes if cfg.profile != "none" else None)
    for i, (order, graphs, det) in enumerate(cells):
        cell = dataclasses.replace(cfg, order=order, cuda_graphs=graphs, deterministic=det,
                                   profile_batch_sizes=profiled, workdir=str(work / f"cell{i}"))
        cfg_file, out = work / f"cell{i}.config.json", work / f"cell{i}.json"
        cfg_file.write_text(json.dumps(dataclasses.asdict(cell)))
        name = f"{order} {'graphs' if graphs else 'eager'}" + (" deterministic" if det else "")
        print(f"cell {i + 1}/{len(cells)}: {name}", file=sys.stderr, flush=True)
        r = subprocess.run([sys.executable, "-m", "collectors", "collect", "decode",
                            "--from-config", str(cfg_file), "--cell-out", str(out)])
        if r.returncode != 0 or not out.is_file():
            raise CliError(f"cell {name} failed (exit {r.returncode}); the cells before it are in "
                           f"{work}")
        for rec in json.loads(out.read_text()):  # the cell named its traces relative to its file
            if rec.get("trace_files"):
                rec["trace_files"] = [str(out.parent / f) for f in rec["trace_files"]]
            records.append(rec)
    return records


def cmd_collect_command(args: argparse.Namespace) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise UsageError("collect command: give the command after --")
    work = Path(tempfile.mkdtemp(prefix="perfwarden-cmd-"))
    inputs = _repeat(args, cmd, work)
    logs = [p for p in inputs if p.suffix == ".log"]
    results = [p for p in inputs if p.suffix != ".log"]
    useful_logs = [p for p in logs if looks_like_log(p.read_text(errors="replace"))]
    try:
        records, warnings = ingest(results + useful_logs[-1:], benchmark=args.benchmark,
                                   label=args.label)
    except EngineOutputError as e:
        raise CliError(str(e)) from None
    if len(results) > 1 and records:
        records = merge_repeats(records)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    emit(records, args.out, args.server)
    return 0


def _repeat(args: argparse.Namespace, cmd: list[str], work: Path) -> list[Path]:
    """Run the command --repeat times (the last under nsys with --nsys); its logs and the
    result file of each repeat, kept in `work`."""
    inputs: list[Path] = []
    for i in range(args.repeat):
        run_cmd = list(cmd)
        if args.nsys and i == args.repeat - 1:
            nsys = nsys_binary()
            if not nsys:
                raise CliError("--nsys: nsys not found (PATH or NSYS)")
            run_cmd = profile_command(nsys, work / "profile") + run_cmd
        print(f"repeat {i + 1}/{args.repeat}: {' '.join(cmd)}", file=sys.stderr, flush=True)
        log = work / f"repeat{i + 1}.log"
        with open(log, "wb") as f:
            r = subprocess.run(run_cmd, stdout=f, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise CliError(f"command exited {r.returncode} on repeat {i + 1}; log: {log}")
        inputs.append(log)
        if args.result:
            res = Path(args.result)
            if not res.is_file():
                raise CliError(f"--result {res}: the command did not write it")
            kept = work / f"repeat{i + 1}{''.join(res.suffixes) or '.json'}"
            kept.write_bytes(res.read_bytes())
            inputs.append(kept)
    return inputs
