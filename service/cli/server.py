"""Server-side commands: `serve`, `worker` (the durable jobs of service/jobs), `db` (Alembic),
`tokens`, `seed`. Their bodies: commands/server.py (serve, worker),
commands/database.py (db, tokens) and commands/seed.py."""
from __future__ import annotations

import argparse

from .common import command


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
    p.set_defaults(func=command("server", "cmd_serve"))

    p = sub.add_parser("worker", help="run the durable jobs: trace analysis, alert evaluation, "
                       "webhook and GitHub deliveries")
    p.add_argument("--drain", action="store_true", help="stop once no job is due")
    p.set_defaults(func=command("server", "cmd_worker"))

    p = sub.add_parser("db", help="database migrations (Alembic)")
    dsub = p.add_subparsers(dest="db_cmd", required=True)
    u = dsub.add_parser("upgrade")
    u.add_argument("rev", nargs="?", default="head")
    d = dsub.add_parser("downgrade")
    d.add_argument("rev")
    dsub.add_parser("current")
    p.set_defaults(func=command("database", "cmd_db"))

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
    p.set_defaults(func=command("database", "cmd_tokens"))

    p = sub.add_parser("seed", help="load run records (and their traces) from a folder")
    p.add_argument("dir")
    p.set_defaults(func=command("seed", "cmd_seed"))
