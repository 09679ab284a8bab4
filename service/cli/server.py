"""Server-side commands: `serve`, `worker` (the durable jobs of service/jobs), `db` (Alembic),
`tokens`, `seed`."""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from collectors.errors import EXIT_ERROR, CliError

from .common import redact, settings

SUPERVISOR_ENV = "PERFWARDEN_SERVE_SUPERVISOR"  # the pid `serve --workers N`'s processes die with
READS_WORKERS_ENV = "PERFWARDEN_SERVE_READ_WORKERS"
READS_NICE = 10  # the reads server's processes: behind the API's (the gate's) on busy cores
READS_START_S = 120.0  # the reads server must answer on its socket within this
READS_PREFIX = "perfwarden-reads-"  # its socket's folder, under the temporary directory


def add_server(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the API and the dashboard",
                       epilog="The database is PERFWARDEN_DATABASE_URL (default: SQLite "
                              "./perfwarden.db); docs/operations.md lists every setting.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--seed", metavar="DIR", help="when the database holds no run, load the run "
                   "records (and their traces) under DIR first")
    p.add_argument("--migrate", action="store_true", help="run migrations first (always on SQLite)")
    p.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    p.add_argument("--read-workers", type=int, default=0, metavar="N",
                   help="run the heavy reads (every page, change points, timelines) in a reads "
                   "server of N processes at a lower scheduling priority, so the gate never "
                   "shares a process with them (default 0: each API process serves them)")
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
    c.add_argument("--scope", choices=["read", "ingest", "write", "admin"], default="write",
                   help="read: reads; ingest: reads, and runs and traces of the --benchmark "
                   "names; write: every write but the admin ones; admin: everything (baselines, "
                   "run deletion, benchmark settings, alert evaluation)")
    c.add_argument("--benchmark", action="append", default=[], metavar="NAME",
                   help="(ingest, repeatable) a benchmark the token may post runs and traces for")
    r = tsub.add_parser("revoke")
    r.add_argument("--name", required=True)
    tsub.add_parser("list")
    p.set_defaults(func=cmd_tokens)

    p = sub.add_parser("seed", help="load run records (and their traces) from a folder")
    p.add_argument("dir")
    p.set_defaults(func=cmd_seed)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .. import serving
    from ..main import create_app
    from ..migrate import current, head, upgrade

    s = settings()
    s.bind_host = args.host
    if s.is_sqlite or args.migrate:
        upgrade(s.database_url)  # the embedded default migrates itself; production migrates apart
    else:
        try:
            rev = current(s.database_url)
        except Exception as e:  # noqa: BLE001 - unreachable database: one line
            raise CliError(f"database {redact(s.database_url)}: {str(e).splitlines()[0]}") from None
        if rev != head():
            raise CliError(f"the database is at revision {rev or 'base'}, not {head()}: run "
                           "`perfwarden db upgrade` (or `serve --migrate`) first")
    from ..traces.storage import sweep_leftovers

    if swept := sweep_leftovers(s.data_dir):
        print(f"removed {swept} temp file(s) of requests a stopped server left", file=sys.stderr)
    if args.seed:
        from ..seed import seed_if_empty

        seed_if_empty(s, args.seed, progress=True)
    jobs = "in this process" if s.in_process_worker else "run `perfwarden worker` beside it"
    print(f"perfwarden on http://{args.host}:{args.port}/ (database: {redact(s.database_url)}; "
          f"anonymous writes: {_writes_open(s)}; reads: "
          f"{'need a token' if s.reads_need_token else 'open'}; durable jobs: {jobs})",
          file=sys.stderr)
    if s.github_token and s.bot_baseline and not s.github_allowed:
        print("PR comments: none will be posted, PERFWARDEN_GITHUB_REPOS lists no repository",
              file=sys.stderr)
    slow_clients = serving.options(s)  # header deadline, connection cap, open-file limit
    os.environ["PERFWARDEN_BIND_HOST"] = args.host
    os.environ[SUPERVISOR_ENV] = str(os.getpid())
    reads = _start_reads(args.read_workers) if args.read_workers > 0 else None
    try:
        if reads is not None:
            s.reads_socket = os.environ["PERFWARDEN_READS_SOCKET"]
        if args.workers > 1:  # each worker process builds its app from the environment
            uvicorn.run("service.cli.server:worker_app", factory=True, host=args.host,
                        port=args.port, workers=args.workers, log_level="warning",
                        **slow_clients)
        else:
            uvicorn.run(create_app(s), host=args.host, port=args.port, log_level="warning",
                        **slow_clients)
    finally:
        if reads is not None:
            _stop_reads(*reads)
    return 0


def _start_reads(workers: int) -> tuple[subprocess.Popen, Path]:
    """The reads server: `workers` processes on a Unix socket in a folder of its own (mode
    0700: only this user connects), at nice READS_NICE, dying with this process; answering
    before this returns. The API processes find its socket in PERFWARDEN_READS_SOCKET."""
    for old in Path(tempfile.gettempdir()).glob(f"{READS_PREFIX}*"):  # a killed serve's
        if old.is_dir() and old.stat().st_uid == os.getuid() and not _answers(old / "reads.sock"):
            shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=READS_PREFIX))
    sock = folder / "reads.sock"
    env = {**os.environ, "PERFWARDEN_READS_SERVER": "1", "PERFWARDEN_JOBS_IN_PROCESS": "0",
           "PERFWARDEN_READS_SOCKET": str(sock), READS_WORKERS_ENV: str(workers)}
    proc = subprocess.Popen([sys.executable, "-c",
                             "from service.cli.server import run_reads; run_reads()"], env=env)
    deadline = time.monotonic() + READS_START_S
    while True:
        if proc.poll() is not None:
            shutil.rmtree(folder, ignore_errors=True)
            raise CliError(f"the reads server exited with code {proc.returncode} on start")
        if _answers(sock):
            break
        if time.monotonic() > deadline:
            _stop_reads(proc, folder)
            raise CliError(f"the reads server did not answer within {READS_START_S:g} s")
        time.sleep(0.1)
    os.environ["PERFWARDEN_READS_SOCKET"] = str(sock)
    print(f"reads server: {workers} process(es) at nice {READS_NICE} on {sock}", file=sys.stderr)
    return proc, folder


def _answers(sock: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(sock))
        return True
    except OSError:
        return False


def _stop_reads(proc: subprocess.Popen, folder: Path) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(folder, ignore_errors=True)


def run_reads() -> None:
    """The reads server's supervisor (started by `serve --read-workers N`): uvicorn on the
    Unix socket PERFWARDEN_READS_SOCKET, its app the service's with PERFWARDEN_READS_SERVER on."""
    import uvicorn

    from collectors.forked import die_with_parent

    from .. import serving
    from ..main import create_app

    die_with_parent(int(os.environ[SUPERVISOR_ENV]))
    if hasattr(os, "nice"):
        os.nice(READS_NICE)  # its worker processes inherit it
    s = settings()
    os.environ[SUPERVISOR_ENV] = str(os.getpid())  # its workers die with this process
    workers, sock = int(os.environ[READS_WORKERS_ENV]), os.environ["PERFWARDEN_READS_SOCKET"]
    if workers > 1:
        uvicorn.run("service.cli.server:worker_app", factory=True, uds=sock, workers=workers,
                    log_level="warning", **serving.options(s))
    else:
        uvicorn.run(create_app(s), uds=sock, log_level="warning", **serving.options(s))


def worker_app():  # noqa: ANN201 - a FastAPI app
    """The app of one of `serve --workers N`'s processes, which dies with the process that
    started it (a supervisor killed with SIGKILL leaves no worker holding the port)."""
    from collectors.forked import die_with_parent

    from ..main import create_app

    die_with_parent(int(os.environ.get(SUPERVISOR_ENV, os.getppid())))
    return create_app()


def cmd_worker(args: argparse.Namespace) -> int:
    """Run the durable jobs (trace analysis, alert evaluation, deliveries) until stopped."""
    from ..db import make_engine, session_factory
    from ..jobs import worker

    s = settings()
    if s.worker_nice and hasattr(os, "nice"):
        os.nice(s.worker_nice)  # the processes it forks for trace pieces inherit it
    print(f"perfwarden worker (database: {redact(s.database_url)}, nice {s.worker_nice})",
          file=sys.stderr)
    engine = make_engine(s.database_url)
    try:
        worker.run(s, session_factory(engine), wait=not args.drain)
    finally:
        engine.dispose()
    return 0


def _writes_open(s) -> str:  # noqa: ANN001 - Settings
    from ..db import make_engine, session_factory, transaction
    from ..usecases import tokens

    if not s.loopback:
        return "closed (not on loopback)"
    engine = make_engine(s.database_url)
    try:
        with transaction(session_factory(engine)) as session:
            ever = tokens.any_ever(session)
    finally:
        engine.dispose()
    return "closed (a token exists)" if ever else "open (loopback, no token yet)"


def cmd_db(args: argparse.Namespace) -> int:
    from sqlalchemy.exc import SQLAlchemyError

    from .. import migrate

    s = settings()
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


def cmd_tokens(args: argparse.Namespace) -> int:
    from ..db import make_engine, session_factory, transaction
    from ..migrate import upgrade
    from ..usecases import tokens

    s = settings()
    if s.is_sqlite:
        upgrade(s.database_url)
    sessions = session_factory(make_engine(s.database_url))
    with transaction(sessions) as session:
        if args.tokens_cmd == "create":
            try:
                token = tokens.create(session, args.name, args.scope, args.benchmark)
            except ValueError as e:
                raise CliError(f"tokens create: {e}") from None
            print(token)
            only = f" for {', '.join(sorted(set(args.benchmark)))}" if args.benchmark else ""
            print(f"token {args.name!r} ({args.scope}{only}) created; it is shown only once",
                  file=sys.stderr)
        elif args.tokens_cmd == "revoke":
            n = tokens.revoke(session, args.name)
            print(f"revoked {n} token(s) named {args.name!r}", file=sys.stderr)
            if not n:
                return EXIT_ERROR
        else:
            for t in tokens.list_all(session):
                print(f"{t.id}\t{t.name}\t{t.scope}\t{'revoked' if t.revoked else 'active'}\t"
                      f"{t.created_at:%Y-%m-%dT%H:%M:%SZ}\t{','.join(t.benchmarks or []) or '*'}")
    return 0


def cmd_seed(args: argparse.Namespace) -> int:
    from ..migrate import upgrade
    from ..seed import seed

    s = settings()
    upgrade(s.database_url)
    n = seed(s, args.dir, progress=True)
    print(f"stored {n} run(s) from {args.dir}", file=sys.stderr)
    return 0
