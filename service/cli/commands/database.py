"""The database's commands' bodies: `db` (Alembic) and `tokens`; they load neither the app, nor
uvicorn, nor the statistics."""
from __future__ import annotations

import argparse
import sys

from sqlalchemy.exc import SQLAlchemyError

from collectors.errors import EXIT_ERROR, CliError

from ...db import make_engine, session_factory, transaction
from ...migrate import current, downgrade, head, upgrade
from ...usecases import tokens
from .local import settings


def cmd_db(args: argparse.Namespace) -> int:
    s = settings()
    try:
        if args.db_cmd == "upgrade":
            upgrade(s.database_url, args.rev)
        elif args.db_cmd == "downgrade":
            downgrade(s.database_url, args.rev)
        cur = current(s.database_url)
    except SQLAlchemyError as e:
        raise CliError(f"database: {str(e).splitlines()[0]}") from None
    except Exception as e:  # noqa: BLE001 - alembic's own errors (unknown revision, ...)
        raise CliError(f"migration: {str(e).splitlines()[0]}") from None
    print(f"{cur or 'base'}{' (head)' if cur == head() else ''}")
    return 0


def cmd_tokens(args: argparse.Namespace) -> int:
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
