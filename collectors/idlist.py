"""Long id lists made readable: consecutive ids as ranges, at most a few parts, the count first
(`6000 ids: 1-6000`). The whole list is what `--json` prints."""
from __future__ import annotations

from collections.abc import Iterable

MAX_PARTS = 8


def id_ranges(ids: Iterable[int]) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive ids, in the order given (a repeat or a step
    down starts a new range)."""
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and i == out[-1][1] + 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def summarize_ids(ids: Iterable[int], noun: str = "id", max_parts: int = MAX_PARTS) -> str:
    """`3 ids: 4, 7-8`; past `max_parts` ranges the first ones and how many more."""
    ids = list(ids)
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in id_ranges(ids)]
    shown = ", ".join(parts[:max_parts])
    if len(parts) > max_parts:
        shown += f", ... ({len(parts) - max_parts} more range(s))"
    return f"{len(ids)} {noun}{'' if len(ids) == 1 else 's'}: {shown}"
