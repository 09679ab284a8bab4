"""`perfwarden gate`'s body: the candidate runs (by id, or the runs of a commit) or an experiment
posted to the server's gate, its answer printed (or its JSON) and, in a GitHub job, the step
summary written; the exit code as in `common.py` (git bisect's under `--bisect`)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from collectors.errors import BadInput, CliError, UsageError
from collectors.options import gate_fields
from collectors.record import pending_evidence

from ...experiments.bisect import step_code
from ...gate.report import print_gate
from ...gate.schemas import GateOut
from ...github.markdown import append_step_summary
from ..common import EXIT_BISECT_ABORT, EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_REGRESSION, api


def _git_head() -> str:
    r = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if r.returncode != 0:
        raise UsageError("--commit HEAD: not inside a git repository")
    return r.stdout.strip()


def _candidate_ids(args: argparse.Namespace) -> list[int]:
    """--run IDs, or the runs of --commit SHA (HEAD: the checked-out commit, for bisect)."""
    if args.run:
        return list(args.run)
    if not args.commit:
        raise UsageError("gate: give --run ID (repeatable) or --commit SHA")
    sha = _git_head() if args.commit == "HEAD" else args.commit
    page = api(args.server, "GET", "/api/v1/runs", params={
        "benchmark": args.benchmark, "commit": sha, "limit": 1000})
    ids = [r["id"] for r in page["data"]]
    if not ids:
        raise BadInput(f"no run of {args.benchmark} at commit {sha[:12]}")
    return ids


def cmd_gate(args: argparse.Namespace) -> int:
    try:
        if args.experiment:
            body: dict = {"experiment": args.experiment}
        else:
            if not args.benchmark or not args.baseline:
                raise UsageError("gate: give --benchmark and --baseline (or --experiment ID)")
            body = {"benchmark": args.benchmark, "baseline": args.baseline,
                    "run_ids": _candidate_ids(args)}
        body.update(gate_fields(args.metric, args.threshold, args.vary))
        raw = api(args.server, "POST", "/api/v1/gate", json=body)
    except CliError as e:
        if args.bisect:  # our error, not the commit's: git stops rather than blame it
            print(f"error: {e}", file=sys.stderr)
            return EXIT_BISECT_ABORT
        raise
    result = GateOut.model_validate(raw)
    append_step_summary(result, os.environ.get("GITHUB_STEP_SUMMARY"))
    if args.json:
        json.dump(raw, sys.stdout, indent=1)
        print()
    else:
        print_gate(result)
        waiting = pending_evidence(args.server, result.candidate_run_ids)
        if waiting:
            print(f"\n  {waiting} (`ingest --wait` waits for it)")
    if args.bisect:
        return step_code(result.verdict)
    return {"pass": EXIT_PASS, "fail": EXIT_REGRESSION}.get(result.verdict, EXIT_INCONCLUSIVE)
