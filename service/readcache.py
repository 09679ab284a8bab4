"""What the heavy reads computed, kept per series revision: a small least-recently-used map
shared by the threads of one process. A key names the database and the revision it was computed
at (a benchmark's run count and newest run id, which every stored or deleted run changes), so
an ingest makes the old entry unreachable and the next read computes afresh; nothing is ever
served for a revision other than the one asked."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
ENTRIES = 512  # answers kept per process; each is one benchmark's (a few hundred kB at most)

_lock = threading.Lock()
_kept: OrderedDict[Hashable, Any] = OrderedDict()


def cached(key: Hashable, compute: Callable[[], T]) -> T:
    """The value kept under `key`, or `compute()` kept there (two threads asking at once may
    both compute; the answer is the same)."""
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    value = compute()
    with _lock:
        _kept[key] = value
        while len(_kept) > ENTRIES:
            _kept.popitem(last=False)
    return value


def clear() -> None:
    with _lock:
        _kept.clear()
