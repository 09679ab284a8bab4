"""Opening an untrusted nsys SQLite export: read-only with `trusted_schema=OFF` (no function of
its schema runs unless SQLite deems it harmless), no value longer than VALUE_LIMIT bytes, and a
file where any table read is a view, a virtual table or has a trigger is refused whole (an nsys
export holds plain tables; a view can run any query, a recursive one forever)."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable

VALUE_LIMIT = 64 << 20  # the longest text or blob read (a chunk's column of numbers: ~6 MB)


def connect(uri: str) -> sqlite3.Connection:
    """A read-only connection to an untrusted file: no schema function SQLite does not deem
    harmless, no value longer than VALUE_LIMIT."""
    con = sqlite3.connect(uri, uri=True)
    con.execute("PRAGMA trusted_schema=OFF")
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_LIMIT)
    return con


def refused_schema(rows: list[tuple[str, str, str, str | None]], tables: Iterable[str]
                   ) -> str | None:
    """Why a file whose `sqlite_master` holds `rows` (type, name, tbl_name, sql) is refused:
    one of the `tables` read that is a view or a virtual table, or has a trigger; None when
    none is. Names compare case-blind, as SQLite resolves them."""
    read = {t.upper() for t in tables}
    for kind, name, table, sql in rows:
        if kind == "view" and name.upper() in read:
            return f"{name} is a view, not a table"
        if kind == "trigger" and (table or "").upper() in read:
            return f"table {table} has a trigger ({name})"
        if kind == "table" and name.upper() in read and (sql or "").lstrip().upper().startswith(
                "CREATE VIRTUAL"):
            return f"{name} is a virtual table"
    return None
