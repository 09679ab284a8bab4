"""The server's commands' bodies: `serve` (the API, its worker processes and the reads server,
each dying with the process that started it) and `worker` (the durable jobs of service/jobs)."""
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

import uvicorn
from fastapi import FastAPI

from collectors.errors import CliError
from collectors.forked import die_with_parent

from ... import serving
from ...config import Settings
from ...db import make_engine, session_factory, transaction
from ...jobs import worker
from ...main import create_app
from ...migrate import current, head, upgrade
from ...seed import seed_if_empty
from ...traces.storage import sweep_leftovers
from ...usecases import tokens
from ..common import redact
from .local import settings

SUPERVISOR_ENV = "PERFWARDEN_SERVE_SUPERVISOR"  # the pid `serve --workers N`'s processes die with
READS_WORKERS_ENV = "PERFWARDEN_SERVE_READ_WORKERS"
READS_NICE = 10  # the reads server's processes: behind the API's (the gate's) on busy cores
READS_START_S = 120.0  # the reads server must answer on its socket within this
READS_PREFIX = "perfwarden-reads-"  # its socket's folder, under the temporary directory



def cmd_serve(args: argparse.Namespace) -> int:
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
    if swept := sweep_leftovers(s.data_dir):
        print(f"removed {swept} temp file(s) of requests a stopped server left", file=sys.stderr)
    if args.seed:
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
            uvicorn.run("service.cli.commands.server:worker_app", factory=True, host=args.host,
                        port=args.port, workers=args.workers, log_level="warning",
                        **slow_clients)
        else:
            uvicorn.run(_settled(create_app(s)), host=args.host, port=args.port, log_level="warning",
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
                             "from service.cli.commands.server import run_reads; run_reads()"], env=env)
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
    die_with_parent(int(os.environ[SUPERVISOR_ENV]))
    if hasattr(os, "nice"):
        os.nice(READS_NICE)  # its worker processes inherit it
    s = settings()
    os.environ[SUPERVISOR_ENV] = str(os.getpid())  # its workers die with this process
    workers, sock = int(os.environ[READS_WORKERS_ENV]), os.environ["PERFWARDEN_READS_SOCKET"]
    if workers > 1:
        uvicorn.run("service.cli.commands.server:worker_app", factory=True, uds=sock, workers=workers,
                    log_level="warning", **serving.options(s))
    else:
        uvicorn.run(_settled(create_app(s)), uds=sock, log_level="warning", **serving.options(s))


def worker_app() -> FastAPI:
    """The app of one of `serve --workers N`'s processes, which dies with the process that
    started it (a supervisor killed with SIGKILL leaves no worker holding the port)."""
    die_with_parent(int(os.environ.get(SUPERVISOR_ENV, os.getppid())))
    return _settled(create_app())


def _settled(app: FastAPI) -> FastAPI:
    """The app, its process's startup objects frozen out of the collector's walk
    (serving.settle)."""
    serving.settle()
    return app


def cmd_worker(args: argparse.Namespace) -> int:
    """Run the durable jobs (trace analysis, alert evaluation, deliveries) until stopped."""
    s = settings()
    if s.worker_nice and hasattr(os, "nice"):
        os.nice(s.worker_nice)  # the processes it forks for trace pieces inherit it
    print(f"perfwarden worker (database: {redact(s.database_url)}, nice {s.worker_nice})",
          file=sys.stderr)
    engine = make_engine(s.database_url)
    try:
        serving.settle()
        worker.run(s, session_factory(engine), wait=not args.drain)
    finally:
        engine.dispose()
    return 0


def _writes_open(s: Settings) -> str:
    if not s.loopback:
        return "closed (not on loopback)"
    engine = make_engine(s.database_url)
    try:
        with transaction(session_factory(engine)) as session:
            ever = tokens.any_ever(session)
    finally:
        engine.dispose()
    return "closed (a token exists)" if ever else "open (loopback, no token yet)"
