"""Collector commands: `collect decode`, `collect command`, `analyze`, `ingest`.

argparse (standard library) so these run on GPU images without extra packages; `perfwarden`
(service/cli.py) mounts the same parsers beside the server commands.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .errors import CliError
from .traces.presets import GUARD_PRESETS


def _ints(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


ORDERS = ("overlap", "late", "serial")


def _orders(text: str) -> list[str]:
    vals = [x.strip() for x in text.split(",") if x.strip()]
    bad = [v for v in vals if v not in ORDERS]
    if not vals or bad:
        raise argparse.ArgumentTypeError(f"expected {', '.join(ORDERS)} (comma-separated), "
                                         f"got {text!r}")
    return list(dict.fromkeys(vals))


def _stream(text: str) -> tuple[int, int]:
    try:
        d, s = text.split(":")
        return int(d), int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected DEVICE:STREAM, got {text!r}") from None


def _positive(kind):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (v > 0 if kind is int else (v >= 0 and math.isfinite(v))):
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return v
    return parse


def add_commands(sub: argparse._SubParsersAction) -> None:
    collect = sub.add_parser("collect", help="run benchmarks on this node and write run records")
    csub = collect.add_subparsers(dest="collect_cmd", required=True)

    d = csub.add_parser("decode", help="built-in tensor-parallel MoE decode benchmark")
    d.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    d.add_argument("--tp", type=_positive(int), default=1)
    d.add_argument("--batch-sizes", type=_ints, default=[1], help="the M sweep, e.g. 1,4,7,8")
    d.add_argument("--trials", type=_positive(int), default=5)
    d.add_argument("--steps", type=_positive(int), default=32, help="timed decode steps per trial")
    d.add_argument("--warmup", type=int, default=8)
    d.add_argument("--layers", type=_positive(int))
    d.add_argument("--shared-experts", "--order", dest="order", type=_orders, default=["overlap"],
                   help="overlap, late or serial; a comma list sweeps them (one process per "
                        "cell)")
    d.add_argument("--cuda-graphs", action="store_true")
    d.add_argument("--graphs", choices=["on", "off", "both"],
                   help="CUDA graphs on, off, or both (a sweep; --cuda-graphs is --graphs on)")
    d.add_argument("--profile", choices=["none", "nsys", "torch"], default="none")
    d.add_argument("--profile-steps", type=_positive(int), default=10)
    d.add_argument("--profile-batch-sizes", type=_ints)
    d.add_argument("--profile-timeout", type=_positive(float), default=300.0, metavar="S",
                   help="watchdog of each profile pass: past S seconds its process group is "
                        "stopped and the run keeps its timed trials (default 300)")
    d.add_argument("--routed-kernel", choices=["bmm", "resident"], default="bmm",
                   help="routed experts as batched GEMMs, or as one resident-grid (persistent) "
                        "Triton kernel with a grid-wide barrier, one CTA per SM (CUDA)")
    d.add_argument("--shape", help="model shape as JSON (ModelShape fields)")
    d.add_argument("--kv-cache-gib", type=_positive(float), default=4.0,
                   help="CPU only: memory granted to the KV cache")
    d.add_argument("--threads", type=_positive(int), default=0,
                   help="CPU: torch threads per rank (default: OMP_NUM_THREADS, else one per "
                        "rank when the machine has fewer cores than ranks x 2)")
    d.add_argument("--extra-work", type=int, default=0,
                   help="planted slowdown: extra shared-expert passes per layer")
    d.add_argument("--plant-slowdown-pct", type=_positive(float), default=0.0,
                   help="CUDA: add a spin kernel costing this percent of the step time")
    d.add_argument("--deterministic", action="store_true",
                   help="deterministic kernels (torch.use_deterministic_algorithms, fixed cuBLAS "
                        "workspace), to tell kernel nondeterminism from real differences")
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

    c = csub.add_parser("command", help="run your own benchmark command N times and read its output")
    c.add_argument("--repeat", type=_positive(int), default=3)
    c.add_argument("--result", help="result file the command writes (vllm bench --output-json/"
                                    "--result-filename); read after each repeat")
    c.add_argument("--nsys", action="store_true", help="run the last repeat under nsys")
    c.add_argument("--benchmark")
    c.add_argument("--label")
    c.add_argument("--out")
    c.add_argument("--server")
    c.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ...")
    c.set_defaults(func=cmd_collect_command)

    a = sub.add_parser("analyze", help="per-step auxiliary-stream gaps, overlap and kernels of traces")
    a.add_argument("traces", nargs="+", metavar="TRACE")
    a.add_argument("--step-regex", default=None,
                   help="the step ranges (default: the first family found: decode_step, "
                        "SGLang step[DECODE bs=N], vLLM execute_..._context_N(...)_generation_N"
                        "(...), ProfilerStep#N; decode and prefill steps told apart)")
    a.add_argument("--main-stream", type=_stream, action="append", default=[])
    a.add_argument("--aux-stream", type=_stream, action="append", default=[])
    a.add_argument("--min-gap-us", type=_positive(float), default=10.0)
    a.add_argument("--diff", nargs="+", metavar="CANDIDATE_TRACE",
                   help="compare against these traces (the candidate)")
    a.add_argument("--guard-kernels", metavar="REGEX",
                   help="ordering check: main-stream kernels that must never run beside aux work")
    a.add_argument("--guard-preset", choices=sorted(GUARD_PRESETS),
                   help="ordering check on a named kernel set: moe-routed = the routed-expert "
                        "kernels of vLLM and SGLang and persistent kernels (a starting point; "
                        "--guard-kernels adds to it)")
    a.add_argument("--guard-range", metavar="REGEX",
                   help="ordering check by phase: the kernels launched inside NVTX ranges of this "
                        "name (e.g. routed_experts); CUDA graph replays are matched through the "
                        "eager reference steps of the same step")
    a.add_argument("--reference", nargs="+", metavar="EAGER_TRACE",
                   help="with --guard-range on graph replays: an eager trace of the same step "
                        "(when the trace has no eager_reference_step ranges of its own)")
    a.add_argument("--jobs", type=_positive(int), default=None,
                   help="rank files loaded in parallel (default: one per core)")
    a.add_argument("--json", action="store_true")
    a.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a.set_defaults(func=cmd_analyze)

    e = sub.add_parser("experiment", help="interleaved A/B on this host: the arms alternate in "
                       "separate processes (ABBA BAAB ...), judged block by block")
    e.add_argument("--baseline-cmd", required=True, help="command writing results to {out}")
    e.add_argument("--candidate-cmd", required=True, help="command writing results to {out}")
    e.add_argument("--pairs", type=_positive(int), default=6, help="blocks (one run of each arm)")
    e.add_argument("--until-decided", action="store_true",
                   help="after --pairs blocks, add blocks until decided or --max-pairs")
    e.add_argument("--max-pairs", type=_positive(int), default=20)
    e.add_argument("--id", help="experiment id (default: exp-TIME-RANDOM)")
    e.add_argument("--benchmark")
    e.add_argument("--label")
    e.add_argument("--vary", action="append", metavar="KEY")
    e.add_argument("--metric", action="append")
    e.add_argument("--threshold", action="append", metavar="METRIC=PCT")
    e.add_argument("--workdir")
    e.add_argument("--timeout", type=_positive(float), default=3600.0,
                   help="seconds per arm command")
    e.add_argument("--out")
    e.add_argument("--server")
    e.set_defaults(func=cmd_experiment)

    i = sub.add_parser("ingest", help="engine outputs / run records -> run records")
    i.add_argument("files", nargs="+", metavar="FILE")
    i.add_argument("--benchmark")
    i.add_argument("--label")
    i.add_argument("--batch-size", type=_positive(int))
    i.add_argument("--output-len", type=_positive(int))
    i.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a config key of every record (repeatable; wins over the file)")
    i.add_argument("--commit")
    i.add_argument("--branch")
    i.add_argument("--gpu", help="GPU model, e.g. 'NVIDIA H200' (default: nvidia-smi)")
    i.add_argument("--gpu-count", type=_positive(int))
    i.add_argument("--repository", metavar="OWNER/NAME")
    i.add_argument("--pr", type=_positive(int))
    i.add_argument("--trials", action="store_true",
                   help="the result files are repeats of one configuration: one run")
    i.add_argument("--started-at", metavar="ISO8601",
                   help="when the engine run started (default: the file's own time stamps, "
                        "else its modification time)")
    i.add_argument("--trace", action="extend", nargs="+", default=[], metavar="FILE|DIR",
                   help="the engine's own profiler output for this run: vLLM's *.pt.trace.json.gz "
                        "(one per rank), SGLang's *-decode*.trace.json.gz, an nsys .sqlite/"
                        ".nsys-rep; a folder gives the trace files in it")
    i.add_argument("--no-detect", action="store_true",
                   help="take nothing from git, GITHUB_* or nvidia-smi")
    i.add_argument("--server")
    i.add_argument("--out")
    i.set_defaults(func=cmd_ingest)


def _config_value(text: str):
    """KEY=VALUE values: integers, numbers, true/false, else the string."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _emit(records: list[dict], out: str | None, server: str | None,
          base: Path | None = None) -> None:
    """Write records (with content-derived idempotency keys) to --out and/or post them to
    --server as one batch, then upload each run's trace set. The whole file is checked before
    anything is posted; `base` is the folder relative trace paths are relative to."""
    from .env import bisect_tag
    from .record import (
        check,
        check_trace,
        delete_run,
        post_records,
        post_trace,
        resolve_trace_files,
        with_key,
        write_records,
    )

    for rec in records:
        tag = bisect_tag(rec.get("commit"))
        if tag:  # a run of the commit the bisect checked out
            rec["bisect"] = tag
            rec["commit"] = rec.get("commit") or tag["commit"]
    for i, rec in enumerate(records):
        try:
            check(with_key(rec))
        except ValueError as e:
            raise CliError(f"record {i}: {e}") from None
    if out:
        write_records(records, out)
        if out != "-":
            print(f"wrote {len(records)} run record(s) to {out}", file=sys.stderr)
            base = Path(out).parent
    if server:
        # runs and their traces land together (spec/api.md v1.2 item 11): every trace is
        # checked before anything is posted, and a trace the server refuses takes the runs
        # of this batch with it
        sets = [resolve_trace_files(rec, base or Path.cwd()) for rec in records]
        for files in sets:
            for f in files:
                try:
                    check_trace(f)
                except ValueError as e:
                    raise CliError(f"{e}; nothing posted") from None
        ids = post_records(server, [{k: v for k, v in r.items() if k != "trace_files"}
                                    for r in records])
        print(f"posted {len(ids)} run(s) as one batch: ids {', '.join(map(str, ids))}",
              file=sys.stderr)
        for rid, files in zip(ids, sets):
            for f in files:
                try:
                    res = post_trace(server, rid, f, set_size=len(files))
                except RuntimeError as e:
                    for gone in ids:
                        delete_run(server, gone)
                    raise CliError(f"trace file {f}: {e}; run(s) {', '.join(map(str, ids))} "
                                   "removed, nothing stored") from None
                print(f"  run {rid}: uploaded trace {f.name} (id {res.get('id')})",
                      file=sys.stderr)
        for rid in ids:
            print(rid, flush=True)  # ids on stdout, one a line, for scripts
    if not out and not server:
        json.dump(records, sys.stdout, indent=1)
        print()


def cmd_collect_decode(args) -> int:
    from .bench.decode import DecodeConfig, config_from_file, run

    if args.from_config:
        try:
            records = run(config_from_file(args.from_config))
        except (RuntimeError, ValueError, TypeError) as e:
            raise CliError(str(e)) from None
        if args.cell_out and records:
            from .record import write_records

            write_records(records, args.cell_out)
        return 0

    shape = {}
    if args.shape:
        try:
            shape = json.loads(args.shape)
        except json.JSONDecodeError as e:
            raise CliError(f"--shape: not JSON ({e.msg})") from None
    if args.layers:
        from .bench.model import ModelShape

        base = ModelShape() if args.device == "cuda" else ModelShape.small(args.tp)
        shape = {**base.as_config(), **shape, "layers": args.layers}
    graphs = {"on": [True], "off": [False], "both": [False, True]}[args.graphs] if args.graphs \
        else [args.cuda_graphs]
    if True in graphs and args.device != "cuda":
        raise CliError("--cuda-graphs (or --graphs on|both) needs --device cuda")
    # without --workdir, a temporary folder that goes when the records are written or posted
    temp = "" if args.workdir else tempfile.mkdtemp(prefix="perfwarden-decode-")
    cfg = DecodeConfig(device=args.device, tp=args.tp, batch_sizes=args.batch_sizes,
                       trials=args.trials, steps=args.steps, warmup=args.warmup,
                       order=args.order[0], cuda_graphs=graphs[0], profile=args.profile,
                       profile_steps=args.profile_steps,
                       profile_batch_sizes=args.profile_batch_sizes, shape=shape,
                       kv_cache_gib=args.kv_cache_gib, extra_work=args.extra_work, seed=args.seed,
                       threads=args.threads if args.device == "cpu" else 0,
                       plant_pct=args.plant_slowdown_pct, workdir=args.workdir or temp,
                       deterministic=args.deterministic,
                       benchmark=args.benchmark, label=args.label,
                       profile_timeout=args.profile_timeout, routed_kernel=args.routed_kernel,
                       quiet=args.quiet)
    cells = [(o, g) for g in graphs for o in args.order]
    records = []
    try:
        try:
            records = run(cfg) if len(cells) == 1 else _sweep(cfg, cells)
        except (RuntimeError, ValueError) as e:
            raise CliError(str(e)) from None
        _report_decode(records)
        _emit(records, args.out, args.server)
    finally:
        if temp:
            _remove_temp(Path(temp), records, args)
    return 0


def _remove_temp(work: Path, records: list[dict], args) -> None:  # noqa: ANN001 - Namespace
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


def _sweep(cfg, cells: list[tuple[str, bool]]) -> list[dict]:  # noqa: ANN001 - DecodeConfig
    """A factorial sweep (shared-expert order x CUDA graphs, beside the batch sizes): one
    process per cell, each running this very config with its cell's settings."""
    import dataclasses

    work = Path(cfg.workdir or tempfile.mkdtemp(prefix="perfwarden-sweep-"))
    work.mkdir(parents=True, exist_ok=True)
    records: list[dict] = []
    for i, (order, graphs) in enumerate(cells):
        cell = dataclasses.replace(cfg, order=order, cuda_graphs=graphs,
                                   workdir=str(work / f"cell{i}"))
        cfg_file, out = work / f"cell{i}.config.json", work / f"cell{i}.json"
        cfg_file.write_text(json.dumps(dataclasses.asdict(cell)))
        name = f"{order} {'graphs' if graphs else 'eager'}"
        print(f"cell {i + 1}/{len(cells)}: {name}", file=sys.stderr, flush=True)
        r = subprocess.run([sys.executable, "-m", "collectors", "collect", "decode",
                            "--from-config", str(cfg_file), "--cell-out", str(out)])
        if r.returncode != 0 or not out.is_file():
            raise CliError(f"cell {name} failed (exit {r.returncode}); the cells before it are in "
                           f"{work}")
        records.extend(json.loads(out.read_text()))
    return records


def cmd_collect_command(args) -> int:
    from .engines.ingest import ingest, merge_repeats
    from .engines.vllm import EngineOutputError

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise CliError("collect command: give the command after --")
    work = Path(tempfile.mkdtemp(prefix="perfwarden-cmd-"))
    inputs: list[Path] = []
    for i in range(args.repeat):
        run_cmd = list(cmd)
        if args.nsys and i == args.repeat - 1:
            from .bench.decode import nsys_binary

            nsys = nsys_binary()
            if not nsys:
                raise CliError("--nsys: nsys not found (PATH or NSYS)")
            run_cmd = [nsys, "profile", "-t", "cuda,nvtx", "--force-overwrite", "true", "-o",
                       str(work / "profile")] + run_cmd
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
    logs = [p for p in inputs if p.suffix == ".log"]
    results = [p for p in inputs if p.suffix != ".log"]
    useful_logs = []
    from .engines.logs import looks_like_log

    for p in logs:
        if looks_like_log(p.read_text(errors="replace")):
            useful_logs.append(p)
    try:
        records, warnings = ingest(results + useful_logs[-1:], benchmark=args.benchmark,
                                   label=args.label)
    except EngineOutputError as e:
        raise CliError(str(e)) from None
    if len(results) > 1 and records:
        records = merge_repeats(records)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    _emit(records, args.out, args.server)
    return 0


def cmd_analyze(args) -> int:
    import re

    from .traces import Options, TraceError
    from .traces.diff import diff_summaries
    from .traces.pipeline import Check, analyze_files
    from .traces.presets import guard_regex
    from .traces.progress import Progress

    guard_kernels = guard_regex(args.guard_preset, args.guard_kernels)
    try:
        for rx in (args.step_regex, guard_kernels, args.guard_range):
            if rx:
                re.compile(rx)
    except re.error as e:
        raise CliError(f"invalid regex: {e}") from None
    opts = Options(step_regex=args.step_regex, min_gap_us=args.min_gap_us,
                   main_streams=args.main_stream, aux_streams=args.aux_stream)
    prog = Progress(None if args.quiet else sys.stderr)

    if args.reference and not args.guard_range:
        raise CliError("--reference is the eager trace for --guard-range; give --guard-range too")

    check = Check(guard_kernels, args.guard_range, tuple(args.reference or ()))

    def one(paths):
        return analyze_files(paths, opts, prog, args.jobs, check)

    try:
        base = one(args.traces)
        result = base
        if args.diff:
            cand = one(args.diff)
            result = diff_summaries(base, cand)
            result["base_summary"], result["candidate_summary"] = base, cand
    except TraceError as e:
        raise CliError(str(e)) from None
    for w in (result.get("warnings") or []) if not args.diff else (
            base["warnings"] + result["candidate_summary"]["warnings"]):
        print(f"warning: {w}", file=sys.stderr)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        from .report import print_analysis, print_diff

        (print_diff if args.diff else print_analysis)(result)
    return 0


def cmd_experiment(args) -> int:
    """On a GPU node with only the collectors: run the blocks, post (`--server`) or write the
    records; `--until-decided --server` asks the server for the verdict between blocks
    (spec/api.md v1.2 item 12)."""
    import secrets
    import time

    from .experiment import ExperimentConfig, ServerJudge, complete, looks, run_experiment
    from .record import post_json, post_records

    if args.until_decided and not args.server:
        raise CliError("--until-decided judges between blocks: give --server URL (the server "
                       "judges), or run it with perfwarden's full install (pip install "
                       "'perfwarden[all]')")
    if args.until_decided and args.max_pairs < args.pairs:
        raise CliError(f"--max-pairs {args.max_pairs} is below --pairs {args.pairs}")
    for cmd, flag in ((args.baseline_cmd, "--baseline-cmd"), (args.candidate_cmd, "--candidate-cmd")):
        if "{out}" not in cmd:
            raise CliError(f"{flag}: the command must write its results to {{out}}")
    exp_id = args.id or f"exp-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"
    workdir = args.workdir or tempfile.mkdtemp(prefix=f"perfwarden-{exp_id}-")
    cfg = ExperimentConfig(baseline_cmd=args.baseline_cmd, candidate_cmd=args.candidate_cmd,
                           pairs=args.pairs, max_pairs=args.max_pairs if args.until_decided else 0,
                           exp_id=exp_id, benchmark=args.benchmark, label=args.label,
                           workdir=workdir, timeout_s=args.timeout)
    body: dict = {"experiment": exp_id,
                  "max_looks": looks(args.pairs, args.max_pairs, args.until_decided)}
    if args.metric:
        body["metrics"] = args.metric
    if args.threshold:
        from .metrics import parse_thresholds

        try:
            body["thresholds"] = parse_thresholds(args.threshold)
        except ValueError as e:
            raise CliError(str(e)) from None
    if args.vary:
        body["vary"] = [k.strip() for v in args.vary for k in v.split(",") if k.strip()]
    judge = None
    if args.server:
        server = args.server

        def post(recs: list[dict]) -> None:
            ids = post_records(server, recs)
            print(f"posted {len(ids)} run(s) of experiment {exp_id}", file=sys.stderr)

        judge = ServerJudge(body, post, lambda b: post_json(server, "/api/v1/gate", b),
                            lambda msg: print(msg, file=sys.stderr, flush=True))
    failure = None
    try:
        run_experiment(cfg, judge if args.until_decided else None)
    except CliError as e:
        failure = e
    blocks, records = complete(cfg.records)
    if records and args.out:
        _emit(records, args.out, None)
    if judge is not None and records:
        judge.flush(records)
    if failure is not None:
        raise CliError(f"{failure} (experiment {exp_id} stopped; {len(blocks)} finished "
                       "block(s) kept)")
    if judge is None:
        print(f"experiment {exp_id}: {len(blocks)} block(s); judge it with `perfwarden gate "
              f"--experiment {exp_id}` against a server, or `perfwarden experiment` locally",
              file=sys.stderr)
        return 0
    from .report import print_verdict

    result = judge.verdict()
    print(f"experiment {exp_id}: {len(blocks)} block(s), judged by {args.server}")
    print_verdict(result)
    return {"pass": 0, "fail": 1}.get(result["verdict"], 3)


def cmd_ingest(args) -> int:
    from .engines.ingest import Identity, ingest
    from .engines.traces import attach as attach_traces
    from .engines.vllm import EngineOutputError

    config = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--config {item!r}: expected KEY=VALUE")
        config[key] = _config_value(value)
    started = None
    if args.started_at:
        from datetime import datetime, timezone

        try:
            t = datetime.fromisoformat(args.started_at.replace("Z", "+00:00"))
        except ValueError:
            raise CliError(f"--started-at {args.started_at!r}: expected ISO 8601 "
                           "(2026-11-28T10:15:00Z)") from None
        t = t.replace(tzinfo=t.tzinfo or timezone.utc).astimezone(timezone.utc)
        started = t.strftime("%Y-%m-%dT%H:%M:%SZ")
    ident = Identity(config=config, commit=args.commit, branch=args.branch, gpu=args.gpu,
                     gpu_count=args.gpu_count, repository=args.repository, pr=args.pr,
                     started_at=started, detect=not args.no_detect)
    try:
        records, warnings = ingest(args.files, benchmark=args.benchmark, label=args.label,
                                   batch_size=args.batch_size, output_len=args.output_len,
                                   identity=ident, trials=args.trials)
        if args.trace:
            warnings += attach_traces(records, args.trace)
    except (EngineOutputError, ValueError) as e:
        raise CliError(str(e)) from None
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.trace:
        files = records[0]["trace_files"]
        print(f"trace set: {len(files)} file(s): {', '.join(Path(f).name for f in files)}",
              file=sys.stderr)
    _emit(records, args.out, args.server, base=Path.cwd())
    return 0


def build_parser(prog: str = "perfwarden") -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    p = argparse.ArgumentParser(prog=prog, description="profiler-guided performance regression "
                                "checks for LLM inference engines")
    sub = p.add_subparsers(dest="command", required=True)
    add_commands(sub)
    return p, sub


def dispatch(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os._exit(0)
    except Exception as e:  # noqa: BLE001 - never a traceback, never exit 1 from the CLI itself
        print(f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser, _ = build_parser()
    return dispatch(parser, argv)
