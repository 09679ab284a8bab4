"""Planner statistics where nothing else keeps them. On a PostgreSQL whose autovacuum is off
(for the server, as on this bench machine, or for a table), the tables ingest grows
are never analyzed: as `runs` grows from thousands to a million rows, the planner still thinks
it holds a few, and the evaluation's lookups of 1,000 runs by id or by body hash turn into
scans of the whole table (measured at 306,200 runs: 0.97 s for a lookup that takes 0.09 s
after ANALYZE). The worker then analyzes each such table when autovacuum's own rule would
have: more rows changed since its last analyze than autovacuum_analyze_threshold plus
autovacuum_analyze_scale_factor times its rows. Where autovacuum is on, it is left to it.
(The embedded SQLite default plans these lookups by their indexes without statistics.)"""
from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from ..db import transaction

TABLES = ("runs", "run_metrics", "samples", "pending_evaluations", "series_states", "alerts",
          "traces")

_STALE = text(
    "SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
    "WHERE s.schemaname = current_schema() AND s.relname = ANY(:tables) "
    "AND (current_setting('autovacuum') = 'off' OR EXISTS (SELECT FROM unnest(c.reloptions) o "
    "     WHERE split_part(o, '=', 1) = 'autovacuum_enabled' "
    "       AND NOT split_part(o, '=', 2)::boolean)) "
    "AND s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8 "
    "+ current_setting('autovacuum_analyze_scale_factor')::float8 * GREATEST(s.n_live_tup, 0) "
    "ORDER BY s.relname")


def analyze_stale(sessions: sessionmaker[Session]) -> list[str]:
    """ANALYZE the tables whose statistics autovacuum would have refreshed by now where it is
    off (for the server or the table), each in a transaction of its own (its lock held no
    longer than its own ANALYZE) and skipped while another holds it; their names. Nothing on
    SQLite."""

    with transaction(sessions) as session:
        if session.get_bind().dialect.name != "postgresql":
            return []
        stale = list(session.scalars(_STALE, {"tables": list(TABLES)}))
    for name in stale:
        with transaction(sessions) as session:  # a name of TABLES, never user input
            session.execute(text(f'ANALYZE (SKIP_LOCKED) "{name}"'))
    return stale
