"""Judging from the command line: `gate` (candidate runs or an experiment against a baseline),
`noise`, `baseline` (named baselines), `attribute`, and `comment` (the PR comment and check
run). `--server` asks a server; `noise` and `attribute` otherwise run the same use case on the
local database."""
from __future__ import annotations

import argparse
import json
import os
import sys

from collectors.errors import BadInput, CliError, UsageError
from collectors.options import gate_fields

from .cli_common import (
    EXIT_BISECT_ABORT,
    EXIT_INCONCLUSIVE,
    EXIT_PASS,
    EXIT_REGRESSION,
    api,
    pending_evidence,
    settings,
)


def add_judging(sub: argparse._SubParsersAction) -> None:
    """gate, noise, baseline, attribute (comment is added after bisect: `add_comment`)."""
    p = sub.add_parser("gate", help="judge candidate runs against a baseline (exit 0 pass, "
                       "1 regression, 3 inconclusive; errors 64 usage, 65 bad input, "
                       "69 unreachable, 2 other)")
    p.add_argument("--server", required=True)
    p.add_argument("--benchmark")
    p.add_argument("--baseline", help="a baseline name, or label:L, commit:SHA, runs:ID,ID")
    p.add_argument("--experiment", metavar="ID",
                   help="judge an experiment's candidate arm against its baseline arm")
    p.add_argument("--run", type=int, action="append", help="candidate run id (repeatable)")
    p.add_argument("--commit", help="candidate: the runs of this commit (HEAD: the checked-out one)")
    p.add_argument("--metric", action="append")
    p.add_argument("--threshold", action="append", metavar="METRIC=PCT")
    p.add_argument("--vary", action="append", metavar="KEY",
                   help="config key the candidate deliberately changes (repeatable)")
    p.add_argument("--bisect", action="store_true", help="exit codes for `git bisect run`: 0 "
                   "good, 1 bad, 125 skip (inconclusive or error)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("noise", help="run-to-run and trial spread of a benchmark's history")
    p.add_argument("benchmark")
    p.add_argument("--metric", default="tok_s")
    p.add_argument("--branch", help="history of this branch (default: the benchmark's default)")
    p.add_argument("--baseline", help="the runs of this baseline reference instead")
    p.add_argument("--server", help="ask this server (default: the local database)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_noise)

    p = sub.add_parser("baseline", help="named baselines: set, show, list, delete")
    bsub = p.add_subparsers(dest="baseline_cmd", required=True)
    for name in ("set", "show", "delete"):
        b = bsub.add_parser(name)
        b.add_argument("name")
        b.add_argument("--benchmark", required=True)
        b.add_argument("--server", required=True)
        if name == "set":
            b.add_argument("--run", type=int, action="append", required=True)
    b = bsub.add_parser("list")
    b.add_argument("--benchmark")
    b.add_argument("--server", required=True)
    p.set_defaults(func=cmd_baseline)

    p = sub.add_parser("attribute", help="which config key explains the run means, trial spread "
                       "or non-identical repeats of a factorial set of runs")
    p.add_argument("benchmark")
    p.add_argument("--metric", default="tok_s", help="a metric, or `determinism`")
    p.add_argument("--label", action="append", help="runs of these labels (repeatable)")
    p.add_argument("--branch")
    p.add_argument("--server", help="ask this server (default: the local database)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_attribute)


def _git_head() -> str:
    import subprocess

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
    from .bot.markdown import append_step_summary
    from .gate_report import print_gate
    from .schemas import GateOut

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
        from .usecases.bisect import step_code

        return step_code(result.verdict)
    return {"pass": EXIT_PASS, "fail": EXIT_REGRESSION}.get(result.verdict, EXIT_INCONCLUSIVE)


def _local_session():
    """A session on the configured database, which must exist and be migrated."""
    from .db import make_engine, session_factory
    from .migrate import current, head

    s = settings()
    if s.is_sqlite:
        path = s.database_url.split("///", 1)[-1]
        if path and path != ":memory:" and not os.path.exists(path):
            raise CliError(f"no database at {path}: give --server URL, or set "
                           "PERFWARDEN_DATABASE_URL")
    try:
        rev = current(s.database_url)
    except Exception as e:  # noqa: BLE001 - unreachable or not a database: one line
        raise CliError(f"database: {str(e).splitlines()[0]}") from None
    if rev != head():
        raise CliError(f"the database is at revision {rev or 'base'}, not {head()}: run "
                       "`perfwarden db upgrade`")
    return session_factory(make_engine(s.database_url))


def _ask(server: str | None, path: str, params: dict, model, local):  # noqa: ANN001
    """A read from the server when one is given, else the same use case on the local database."""
    if server:
        return model.model_validate(api(server, "GET", path, params=params))
    from .db import transaction
    from .errors import DomainError

    with transaction(_local_session()) as session:
        try:
            return local(session)
        except DomainError as e:
            raise CliError(e.message) from None


def cmd_noise(args: argparse.Namespace) -> int:
    from .gate_report import print_noise
    from .schemas import NoiseOut
    from .usecases.history import noise

    params = {"benchmark": args.benchmark, "metric": args.metric}
    params.update({k: v for k, v in (("branch", args.branch), ("baseline", args.baseline)) if v})
    result = _ask(args.server, "/api/v1/noise", params, NoiseOut,
                  lambda session: noise(session, args.benchmark, args.metric, args.branch,
                                        args.baseline))
    if args.json:
        print(result.model_dump_json(indent=1))
        return 0
    print_noise(result)
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    """Baselines without curl: set (create or move), show, list, delete."""
    base = f"/api/v1/baselines/{args.benchmark}/{args.name}" if getattr(args, "name", None) else ""
    if args.baseline_cmd == "set":
        try:
            row = api(args.server, "PUT", base, json={"run_ids": args.run})
            verb = "moved"
        except CliError as e:
            if "answered 404" not in str(e):
                raise
            row = api(args.server, "POST", "/api/v1/baselines", json={
                "name": args.name, "benchmark": args.benchmark, "run_ids": args.run})
            verb = "created"
        print(f"{verb} baseline {row['name']!r} of {row['benchmark']}: runs {row['run_ids']}",
              file=sys.stderr)
    elif args.baseline_cmd == "show":
        row = api(args.server, "GET", base)
        print(json.dumps(row, indent=1))
    elif args.baseline_cmd == "list":
        params = {"benchmark": args.benchmark} if args.benchmark else {}
        for row in api(args.server, "GET", "/api/v1/baselines", params=params)["data"]:
            print(f"{row['benchmark']}\t{row['name']}\truns {','.join(map(str, row['run_ids']))}\t"
                  f"updated {row['updated_at']}")
    else:
        api(args.server, "DELETE", base)
        print(f"deleted baseline {args.name!r} of {args.benchmark}", file=sys.stderr)
    return 0


def cmd_attribute(args: argparse.Namespace) -> int:
    """Which config key explains the run means, the trial spread or non-identical repeats."""
    from .schemas import AttributionOut

    params: dict = {"benchmark": args.benchmark, "metric": args.metric}
    if args.label:
        params["label"] = args.label
    if args.branch:
        params["branch"] = args.branch
    from .usecases.attribution import attribution

    result = _ask(args.server, "/api/v1/attribution", params, AttributionOut,
                  lambda session: attribution(session, args.benchmark, args.metric, args.label,
                                              args.branch))
    if args.json:
        print(result.model_dump_json(indent=1))
        return 0
    print(f"attribution over {result.runs} run(s) of {result.benchmark} / {result.metric}")
    for title, factors, sentence in (
            ("run means" if result.metric != "determinism" else "bitwise-identical repeats",
             result.factors, result.finding),
            ("trial spread", result.spread_factors, result.spread_finding)):
        if factors is None:
            continue
        print(f"\n  {title}: {sentence}")
        print(f"  {'key':<18} {'explains':>9} {'p':>9} {'effect':>10}  levels")
        for f in factors:
            p = "-" if f.p_value is None else f"{f.p_value:.2g}"
            print(f"  {f.key:<18} {100 * f.explains:>8.1f}% {p:>9} {f.effect:>10.3g}  "
                  f"{', '.join(map(str, f.levels))}")
    return 0


def add_comment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("comment", help="post or update the PR comment with the verdict")
    p.add_argument("--server", required=True)
    p.add_argument("--benchmark")
    p.add_argument("--baseline")
    p.add_argument("--run", type=int, action="append")
    p.add_argument("--experiment", metavar="ID", help="report this interleaved experiment")
    p.add_argument("--repo", required=True, metavar="OWNER/NAME")
    p.add_argument("--pr", type=int, help="the pull request to comment on")
    p.add_argument("--check", action="store_true", help="also create or update the check run "
                   "`perfwarden: BENCHMARK` on the candidate commit (a commit status where the "
                   "token may not write checks)")
    p.add_argument("--sha", help="the candidate commit for --check (default: the candidate "
                   "runs' commit)")
    p.add_argument("--metric", action="append", help="judge these metrics (as gate --metric)")
    p.add_argument("--threshold", action="append", metavar="METRIC=PCT",
                   help="as gate --threshold")
    p.add_argument("--vary", action="append", metavar="KEY")
    p.add_argument("--dashboard-url")
    p.add_argument("--error", metavar="MESSAGE", help="the gate could not run: post a comment "
                   "saying why and (with --check) a failed check titled `ERROR: <first line>`; "
                   "needs --benchmark, not --run")
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=cmd_comment)


def cmd_comment(args: argparse.Namespace) -> int:
    from .bot.comment import post_comment

    return post_comment(args, api)
