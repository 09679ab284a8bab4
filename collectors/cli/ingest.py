"""`ingest`: engine outputs (vLLM, SGLang results and logs) and run records -> run records, with
the engine's own traces attached (`--trace`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..engines.identity import config_value
from ..engines.ingest import Identity, ingest
from ..engines.traces import attach as attach_traces
from ..engines.vllm import EngineOutputError
from ..errors import BadInput, CliError, UsageError
from ..options import positive
from ..record import OUTSIDE_TRACES
from .emit import emit
from .wait import wait_for_traces


def add_ingest(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser("ingest", help="engine outputs / run records -> run records")
    i.add_argument("files", nargs="+", metavar="FILE")
    i.add_argument("--benchmark")
    i.add_argument("--label")
    i.add_argument("--batch-size", type=positive(int))
    i.add_argument("--output-len", type=positive(int))
    i.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a config key of every record (repeatable; wins over the file)")
    i.add_argument("--commit")
    i.add_argument("--branch")
    i.add_argument("--gpu", help="GPU model, e.g. 'NVIDIA H200' (default: nvidia-smi)")
    i.add_argument("--gpu-count", type=positive(int))
    i.add_argument("--repository", metavar="OWNER/NAME")
    i.add_argument("--pr", type=positive(int))
    i.add_argument("--trials", action="store_true",
                   help="the result files are repeats of one configuration: one run")
    i.add_argument("--started-at", metavar="ISO8601",
                   help="when the engine run started (default: the file's own time stamps, "
                        "else its modification time)")
    i.add_argument("--trace", action="extend", nargs="+", default=[], metavar="FILE|DIR",
                   help="the engine's own profiler output for this run: vLLM's *.pt.trace.json.gz "
                        "(one per rank), SGLang's *-decode*.trace.json.gz, an nsys .sqlite/"
                        ".nsys-rep; a folder gives the trace files in it")
    i.add_argument("--allow-outside-traces", action="store_true",
                   help="let a run record file name trace_files outside its own folder "
                        "(refused by default: a record file never uploads other local files)")
    i.add_argument("--no-detect", action="store_true",
                   help="take nothing from git, GITHUB_* or nvidia-smi")
    i.add_argument("--server")
    i.add_argument("--wait", nargs="?", type=positive(float), const=600.0, metavar="SECONDS",
                   help="with --server: return once every uploaded trace is analyzed (done) or "
                        "failed (exit 2, with its error); at most SECONDS (default 600)")
    i.add_argument("--out")
    i.add_argument("--json", action="store_true",
                   help="with --server: print {\"ids\": [...]}, every stored run's id, instead "
                        "of one id a line (standard error shows them as ranges)")
    i.set_defaults(func=cmd_ingest)


def cmd_ingest(args: argparse.Namespace) -> int:
    ident = Identity(config=_config(args.config), commit=args.commit, branch=args.branch,
                     gpu=args.gpu, gpu_count=args.gpu_count, repository=args.repository,
                     pr=args.pr, started_at=_started(args.started_at), detect=not args.no_detect)

    OUTSIDE_TRACES.set(args.allow_outside_traces)
    try:
        records, warnings = ingest(args.files, benchmark=args.benchmark, label=args.label,
                                   batch_size=args.batch_size, output_len=args.output_len,
                                   identity=ident, trials=args.trials)
        if args.trace:
            warnings += attach_traces(records, args.trace)
    except (EngineOutputError, ValueError) as e:
        raise BadInput(str(e)) from None
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.trace:
        files = records[0]["trace_files"]
        sizes = [g["files"] for g in records[0].get("trace_groups") or [{"files": len(files)}]]
        what = "trace set" if len(sizes) == 1 else f"{len(sizes)} trace sets"
        print(f"{what}: {len(files)} file(s): {', '.join(Path(f).name for f in files)}",
              file=sys.stderr)
    if args.wait and not args.server:
        raise UsageError("--wait needs --server (it waits for the server's analysis)")
    if args.json and args.out == "-":
        raise UsageError("--json and --out - both print on standard output: give --out FILE")
    if not args.server or not (args.wait or args.json):
        emit(records, args.out, args.server, base=Path.cwd())
        return 0
    import contextlib
    import io
    import json


    posted = io.StringIO()  # the ids emit prints, one a line
    with contextlib.redirect_stdout(posted):
        emit(records, args.out, args.server, base=Path.cwd())
    ids = [int(x) for x in posted.getvalue().split()[-len(records):]]
    sys.stdout.write(json.dumps({"ids": ids}) + "\n" if args.json else posted.getvalue())
    sys.stdout.flush()
    if args.wait:
        wait_for_traces(args.server, ids, args.wait)
    return 0


def _config(items: list[str]) -> dict:
    """`--config KEY=VALUE` (repeatable), each value read as a log's settings are."""

    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--config {item!r}: expected KEY=VALUE")
        config[key] = config_value(value)
    return config


def _started(text: str | None) -> str | None:
    """`--started-at` as UTC ISO 8601 (`...Z`)."""
    if not text:
        return None
    from datetime import datetime, timezone

    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--started-at {text!r}: expected ISO 8601 "
                       "(2026-11-28T10:15:00Z)") from None
    t = t.replace(tzinfo=t.tzinfo or timezone.utc).astimezone(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")
