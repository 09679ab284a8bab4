"""`perfwarden`: the collector commands plus serve, db, tokens, seed, gate, noise and comment.

Server-side imports happen inside each command, so `perfwarden collect ...` runs on a GPU node
that has only the collectors' dependencies.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from collectors.cli import build_parser, dispatch
from collectors.errors import CliError

EXIT_PASS, EXIT_REGRESSION, EXIT_ERROR, EXIT_INCONCLUSIVE = 0, 1, 2, 3


def _settings():
    from .config import Settings

    try:
        return Settings()
    except Exception as e:  # noqa: BLE001 - a bad environment variable: one line, exit 2
        raise CliError(f"bad PERFWARDEN_* setting: {str(e).splitlines()[0]}") from None


def cmd_serve(args) -> int:
    import uvicorn

    from .main import create_app
    from .migrate import current, head, upgrade

    s = _settings()
    s.bind_host = args.host
    if s.is_sqlite or args.migrate:
        upgrade(s.database_url)  # the embedded default migrates itself; production migrates apart
    else:
        try:
            rev = current(s.database_url)
        except Exception as e:  # noqa: BLE001 - unreachable database: one line
            raise CliError(f"database {_redact(s.database_url)}: {str(e).splitlines()[0]}") from None
        if rev != head():
            raise CliError(f"the database is at revision {rev or 'base'}, not {head()}: run "
                           "`perfwarden db upgrade` (or `serve --migrate`) first")
    if args.seed:
        from .seed import seed_if_empty

        seed_if_empty(s, args.seed, progress=True)
    jobs = "in this process" if s.in_process_worker else "run `perfwarden worker` beside it"
    print(f"perfwarden on http://{args.host}:{args.port}/ (database: {_redact(s.database_url)}; "
          f"anonymous writes: {_writes_open(s)}; durable jobs: {jobs})", file=sys.stderr)
    if args.workers > 1:  # each worker process builds its app from the environment
        os.environ["PERFWARDEN_BIND_HOST"] = args.host
        uvicorn.run("service.main:create_app", factory=True, host=args.host, port=args.port,
                    workers=args.workers, log_level="warning")
    else:
        uvicorn.run(create_app(s), host=args.host, port=args.port, log_level="warning")
    return 0


def cmd_worker(args) -> int:
    """Run the durable jobs (trace analysis, alert evaluation, deliveries) until stopped."""
    from .db import make_engine, session_factory
    from .jobs import worker

    s = _settings()
    print(f"perfwarden worker (database: {_redact(s.database_url)})", file=sys.stderr)
    engine = make_engine(s.database_url)
    try:
        worker.run(s, session_factory(engine), wait=not args.drain)
    finally:
        engine.dispose()
    return 0


def _writes_open(s) -> str:  # noqa: ANN001 - Settings
    from .db import make_engine, session_factory, transaction
    from .usecases import tokens

    if not s.loopback:
        return "closed (not on loopback)"
    engine = make_engine(s.database_url)
    try:
        with transaction(session_factory(engine)) as session:
            ever = tokens.any_ever(session)
    finally:
        engine.dispose()
    return "closed (a token exists)" if ever else "open (loopback, no token yet)"


def _redact(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':')[0]}:***@{host}" if ":" in creds else url
    return url


def cmd_db(args) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from . import migrate

    s = _settings()
    try:
        if args.db_cmd == "upgrade":
            migrate.upgrade(s.database_url, args.rev)
        elif args.db_cmd == "downgrade":
            migrate.downgrade(s.database_url, args.rev)
        cur = migrate.current(s.database_url)
    except SQLAlchemyError as e:
        raise CliError(f"database: {str(e).splitlines()[0]}") from None
    except Exception as e:  # noqa: BLE001 - alembic's own errors (unknown revision, ...)
        raise CliError(f"migration: {str(e).splitlines()[0]}") from None
    print(f"{cur or 'base'}{' (head)' if cur == migrate.head() else ''}")
    return 0


def cmd_tokens(args) -> int:
    from .db import make_engine, session_factory, transaction
    from .migrate import upgrade
    from .usecases import tokens

    s = _settings()
    if s.is_sqlite:
        upgrade(s.database_url)
    sessions = session_factory(make_engine(s.database_url))
    with transaction(sessions) as session:
        if args.tokens_cmd == "create":
            token = tokens.create(session, args.name, args.scope)
            print(token)
            print(f"token {args.name!r} ({args.scope}) created; it is shown only once",
                  file=sys.stderr)
        elif args.tokens_cmd == "revoke":
            n = tokens.revoke(session, args.name)
            print(f"revoked {n} token(s) named {args.name!r}", file=sys.stderr)
            if not n:
                return EXIT_ERROR
        else:
            for t in tokens.list_all(session):
                print(f"{t.id}\t{t.name}\t{t.scope}\t{'revoked' if t.revoked else 'active'}\t"
                      f"{t.created_at:%Y-%m-%dT%H:%M:%SZ}")
    return 0


def cmd_seed(args) -> int:
    from .migrate import upgrade
    from .seed import seed

    s = _settings()
    upgrade(s.database_url)
    n = seed(s, args.dir, progress=True)
    print(f"stored {n} run(s) from {args.dir}", file=sys.stderr)
    return 0


def _client(server: str):
    import httpx

    headers = {}
    token = os.environ.get("PERFWARDEN_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=60)


def _api(server: str, method: str, path: str, **kw) -> dict:
    import httpx

    try:
        with _client(server) as c:
            r = c.request(method, path, **kw)
    except httpx.HTTPError as e:
        raise CliError(f"cannot reach {server}: {e}") from None
    if r.status_code == 204:
        return {}
    try:
        body = r.json()
    except ValueError:
        raise CliError(f"{server} answered {r.status_code} without JSON") from None
    if r.status_code >= 400:
        msg = body.get("error", {}).get("message") if isinstance(body, dict) else None
        raise CliError(f"{server} answered {r.status_code}: {msg or body}")
    return body


EXIT_BISECT_ABORT = 128  # `git bisect run`: stop the bisect (an error of ours, not the commit's)


def _git_head() -> str:
    import subprocess

    r = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if r.returncode != 0:
        raise CliError("--commit HEAD: not inside a git repository")
    return r.stdout.strip()


def _candidate_ids(args) -> list[int]:
    """--run IDs, or the runs of --commit SHA (HEAD: the checked-out commit, for bisect)."""
    if args.run:
        return list(args.run)
    if not args.commit:
        raise CliError("gate: give --run ID (repeatable) or --commit SHA")
    sha = _git_head() if args.commit == "HEAD" else args.commit
    page = _api(args.server, "GET", "/api/v1/runs", params={
        "benchmark": args.benchmark, "commit": sha, "limit": 1000})
    ids = [r["id"] for r in page["data"]]
    if not ids:
        raise CliError(f"no run of {args.benchmark} at commit {sha[:12]}")
    return ids


def cmd_gate(args) -> int:
    from .bot.markdown import append_step_summary
    from .gate_report import print_gate
    from .schemas import GateOut

    try:
        if args.experiment:
            body: dict = {"experiment": args.experiment}
        else:
            if not args.benchmark or not args.baseline:
                raise CliError("gate: give --benchmark and --baseline (or --experiment ID)")
            body = {"benchmark": args.benchmark, "baseline": args.baseline,
                    "run_ids": _candidate_ids(args)}
        if args.metric:
            body["metrics"] = args.metric
        if args.vary:
            body["vary"] = [k.strip() for v in args.vary for k in v.split(",") if k.strip()]
        if args.threshold:
            body["thresholds"] = _thresholds(args.threshold)
        raw = _api(args.server, "POST", "/api/v1/gate", json=body)
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
    if args.bisect:
        from .usecases.bisect import step_code

        return step_code(result.verdict)
    return {"pass": EXIT_PASS, "fail": EXIT_REGRESSION}.get(result.verdict, EXIT_INCONCLUSIVE)


def _local_session():
    """A session on the configured database, which must exist and be migrated."""
    from .db import make_engine, session_factory
    from .migrate import current, head

    s = _settings()
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
        return model.model_validate(_api(server, "GET", path, params=params))
    from .db import transaction
    from .errors import DomainError

    with transaction(_local_session()) as session:
        try:
            return local(session)
        except DomainError as e:
            raise CliError(e.message) from None


def cmd_noise(args) -> int:
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


def cmd_baseline(args) -> int:
    """Baselines without curl: set (create or move), show, list, delete."""
    base = f"/api/v1/baselines/{args.benchmark}/{args.name}" if getattr(args, "name", None) else ""
    if args.baseline_cmd == "set":
        try:
            row = _api(args.server, "PUT", base, json={"run_ids": args.run})
            verb = "moved"
        except CliError as e:
            if "answered 404" not in str(e):
                raise
            row = _api(args.server, "POST", "/api/v1/baselines", json={
                "name": args.name, "benchmark": args.benchmark, "run_ids": args.run})
            verb = "created"
        print(f"{verb} baseline {row['name']!r} of {row['benchmark']}: runs {row['run_ids']}",
              file=sys.stderr)
    elif args.baseline_cmd == "show":
        row = _api(args.server, "GET", base)
        print(json.dumps(row, indent=1))
    elif args.baseline_cmd == "list":
        params = {"benchmark": args.benchmark} if args.benchmark else {}
        for row in _api(args.server, "GET", "/api/v1/baselines", params=params)["data"]:
            print(f"{row['benchmark']}\t{row['name']}\truns {','.join(map(str, row['run_ids']))}\t"
                  f"updated {row['updated_at']}")
    else:
        _api(args.server, "DELETE", base)
        print(f"deleted baseline {args.name!r} of {args.benchmark}", file=sys.stderr)
    return 0


def _thresholds(items: list[str] | None) -> dict[str, float]:
    from collectors.metrics import parse_thresholds

    try:
        return parse_thresholds(items)
    except ValueError as e:
        raise CliError(str(e)) from None


class _LocalJudge:
    """The experiment's verdict without a server: its records in a SQLite file beside them,
    judged by the same use case the API runs."""

    def __init__(self, workdir: Path):
        from .db import make_engine, session_factory
        from .migrate import upgrade

        url = f"sqlite:///{workdir / 'experiment.db'}"
        upgrade(url)
        self.engine = make_engine(url)
        self.sessions = session_factory(self.engine)

    def __call__(self, records: list[dict], exp_id: str, body: dict):
        from .config import Settings
        from .db import transaction
        from .schemas import GateIn, RunIn
        from .usecases.ingest import store_runs
        from .usecases.verdicts import gate

        store_runs(self.sessions, [RunIn.model_validate(r) for r in records])
        with transaction(self.sessions) as session:  # the server's alpha, the stored looks
            return gate(session, GateIn.model_validate(body), Settings().gate_alpha)


def cmd_experiment(args) -> int:
    """Interleaved A/B on this host: arms alternate in separate processes (ABBA BAAB ...)."""
    import secrets
    import tempfile
    from datetime import datetime, timezone

    from collectors.experiment import ExperimentConfig, looks, run_experiment
    from collectors.experiment import complete as complete_blocks
    from collectors.record import post_records, write_records

    from .gate_report import print_gate
    from .schemas import GateOut

    for cmd, flag in ((args.baseline_cmd, "--baseline-cmd"), (args.candidate_cmd, "--candidate-cmd")):
        if "{out}" not in cmd:
            raise CliError(f"{flag}: the command must write its results to {{out}}")
    if args.until_decided and args.max_pairs < args.pairs:
        raise CliError(f"--max-pairs {args.max_pairs} is below --pairs {args.pairs}")
    exp_id = args.id or (f"exp-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-"
                         f"{secrets.token_hex(2)}")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix=f"perfwarden-{exp_id}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    body: dict = {"experiment": exp_id,
                  "max_looks": looks(args.pairs, args.max_pairs, args.until_decided)}
    if args.metric:
        body["metrics"] = args.metric
    if args.threshold:
        body["thresholds"] = _thresholds(args.threshold)
    if args.vary:
        body["vary"] = [k.strip() for v in args.vary for k in v.split(",") if k.strip()]
    judge = _LocalJudge(workdir)

    def decided(records: list[dict], blocks: int) -> bool:
        verdict = judge(records, exp_id, body).verdict
        print(f"experiment {exp_id}: after {blocks} block(s): {verdict}", file=sys.stderr)
        return verdict != "inconclusive"

    cfg = ExperimentConfig(baseline_cmd=args.baseline_cmd, candidate_cmd=args.candidate_cmd,
                           pairs=args.pairs, max_pairs=args.max_pairs if args.until_decided else 0,
                           exp_id=exp_id, benchmark=args.benchmark, label=args.label,
                           workdir=str(workdir), timeout_s=args.timeout)
    failure = None
    try:
        run_experiment(cfg, decided if args.until_decided else None)
    except CliError as e:
        failure = e
    complete, records = complete_blocks(cfg.records)
    if records and args.out:
        write_records(records, args.out)
        print(f"wrote {len(records)} run record(s) of {len(complete)} block(s) to {args.out}",
              file=sys.stderr)
    if records and args.server:
        ids = post_records(args.server, records)
        print(f"posted {len(ids)} run(s) of experiment {exp_id}", file=sys.stderr)
    if failure is not None:
        raise CliError(f"{failure} (experiment {exp_id} stopped; {len(complete)} finished "
                       "block(s) kept)")
    if args.server:
        result = GateOut.model_validate(_api(args.server, "POST", "/api/v1/gate", json=body))
    else:
        result = judge(records, exp_id, body)
    order = " ".join("".join("A" if a == "baseline" else "B" for a in _order(b))
                     for b in sorted(complete))
    print(f"experiment {exp_id}: {len(complete)} block(s), order {order} (A baseline, B candidate)")
    print_gate(result)
    return {"pass": EXIT_PASS, "fail": EXIT_REGRESSION}.get(result.verdict, EXIT_INCONCLUSIVE)


def _order(block: int) -> tuple[str, str]:
    from collectors.experiment import block_order

    return block_order(block)


def cmd_attribute(args) -> int:
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


def _bisect_plan(args):  # noqa: ANN001 - Namespace
    import secrets
    from datetime import datetime, timezone

    from .usecases.bisect import Plan

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else list(args.cmd)
    if not cmd:
        raise CliError("bisect: give the command that collects and posts runs after --")
    if args.runs < 1:
        raise CliError("--runs must be at least 1")
    bid = args.id or f"bisect-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"

    def api(method: str, path: str, **kw) -> dict:
        return _api(args.server, method, path, **kw)

    return Plan(bisect_id=bid, benchmark=args.benchmark, api=api, cmd=cmd, runs=args.runs,
                metrics=args.metric, thresholds=_thresholds(args.threshold) or None)


def cmd_bisect(args) -> int:
    """`perfwarden bisect --good REF --bad REF ... -- CMD` (spec/api.md v1.2 item 8); with
    `--step` one commit of the `git bisect run` it drives."""
    from .gate_report import print_gate
    from .schemas import GateOut
    from .usecases import bisect as uc

    def show(raw: dict) -> None:
        print_gate(GateOut.model_validate(raw))

    plan = _bisect_plan(args)
    if args.step:
        try:
            plan.reference = [int(x) for x in (args.reference or "").split(",") if x]
        except ValueError:
            raise CliError(f"--reference {args.reference!r}: expected run ids") from None
        if not plan.reference:
            raise CliError("--step needs --reference RUN,RUN,...")
        try:
            return uc.step(plan, show)
        except (CliError, uc.BisectError) as e:
            print(f"error: {e}", file=sys.stderr)
            return uc.ABORT
    if not args.good or not args.bad:
        raise CliError("bisect: give --good REF and --bad REF")
    step_argv = [sys.executable, "-m", "service.cli", "bisect", "--step", "--id", plan.bisect_id,
                 "--benchmark", args.benchmark, "--server", args.server, "--runs", str(args.runs)]
    for m in args.metric or []:
        step_argv += ["--metric", m]
    for t in args.threshold or []:
        step_argv += ["--threshold", t]
    try:
        out = uc.bisect(plan, args.good, args.bad, step_argv)
    except uc.BisectError as e:
        raise CliError(str(e)) from None
    if out.exit_code == uc.UNDECIDED:
        print(f"bisect {plan.bisect_id}: undecided: skipped commits left {len(out.candidates)} "
              "candidate(s) for the first bad commit:")
        for c in out.candidates:
            print(f"  {c}")
        return EXIT_INCONCLUSIVE
    assert out.first_bad is not None
    print(f"first bad commit: {out.first_bad} {out.subject}")
    print(f"bisect {plan.bisect_id}: reference runs {plan.reference} at {args.good}")
    if out.gate is not None:
        show(out.gate)
    return EXIT_PASS


def cmd_comment(args) -> int:
    from .bot.comment import post_comment

    return post_comment(args, _api)


def main(argv: list[str] | None = None) -> int:
    parser, sub = build_parser()

    p = sub.add_parser("serve", help="serve the API and the dashboard")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--seed", metavar="DIR", help="when the database holds no run, load the run "
                   "records (and their traces) under DIR first")
    p.add_argument("--migrate", action="store_true", help="run migrations first (always on SQLite)")
    p.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("worker", help="run the durable jobs: trace analysis, alert evaluation, "
                       "webhook and GitHub deliveries")
    p.add_argument("--drain", action="store_true", help="stop once no job is due")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("db", help="database migrations (Alembic)")
    dsub = p.add_subparsers(dest="db_cmd", required=True)
    u = dsub.add_parser("upgrade")
    u.add_argument("rev", nargs="?", default="head")
    d = dsub.add_parser("downgrade")
    d.add_argument("rev")
    dsub.add_parser("current")
    p.set_defaults(func=cmd_db)

    p = sub.add_parser("tokens", help="API tokens")
    tsub = p.add_subparsers(dest="tokens_cmd", required=True)
    c = tsub.add_parser("create")
    c.add_argument("--name", required=True)
    c.add_argument("--scope", choices=["read", "write"], default="write")
    r = tsub.add_parser("revoke")
    r.add_argument("--name", required=True)
    tsub.add_parser("list")
    p.set_defaults(func=cmd_tokens)

    p = sub.add_parser("seed", help="load run records (and their traces) from a folder")
    p.add_argument("dir")
    p.set_defaults(func=cmd_seed)

    p = sub.add_parser("gate", help="judge candidate runs against a baseline (exit 0 pass, "
                       "1 regression, 3 inconclusive, 2 error)")
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

    p = sub.add_parser("bisect", help="find the first bad commit: reference runs at --good, then "
                       "`git bisect run` with CMD at each step (exit 0 found, 3 undecided, 2 error)")
    p.add_argument("--good", metavar="REF")
    p.add_argument("--bad", metavar="REF")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--server", required=True)
    p.add_argument("--runs", type=int, default=3, help="runs of CMD per commit (default 3)")
    p.add_argument("--metric", action="append")
    p.add_argument("--threshold", action="append", metavar="METRIC=PCT")
    p.add_argument("--id", help=argparse.SUPPRESS)
    p.add_argument("--step", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--reference", help=argparse.SUPPRESS)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ... (posts runs with --server)")
    p.set_defaults(func=cmd_bisect)

    # the collectors define `experiment` (run and write records); here it also judges
    sub.choices["experiment"].set_defaults(func=cmd_experiment)

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
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=cmd_comment)
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["gate"] and "--bisect" in args_in:
        return _bisect_exit(parser, args_in)
    if args_in[:1] == ["bisect"] and "--step" in args_in:
        return _bisect_exit(parser, args_in)
    return dispatch(parser, args_in)


def _bisect_exit(parser, argv: list[str]) -> int:  # noqa: ANN001 - ArgumentParser
    """Under `git bisect run`, any error of the command itself, a usage error included, is
    128: git stops the bisect instead of blaming the commit (2 would read as "bad")."""
    try:
        rc = dispatch(parser, argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else EXIT_BISECT_ABORT
    return EXIT_BISECT_ABORT if rc == EXIT_ERROR else rc


if __name__ == "__main__":
    sys.exit(main())
