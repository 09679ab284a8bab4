"""A run record on its way from the engine readers to the finished record: the record itself
(the dict `perfwarden ingest` writes or posts, holding only fields of the record format) and
what ingest knows about where it came from, kept beside it, never inside it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EngineRecord:
    """`record` is the run record; `engine`: it was read from an engine's output (a result
    file or a server log), so ingest fills in its identity and derives its idempotency key,
    rather than from a run record file taken as written; `files`: the sha256 of each file it
    was read from, in order (the results, then the logs beside them), which its key hashes."""

    record: dict[str, Any]
    engine: bool = True
    files: list[str] = field(default_factory=list)
