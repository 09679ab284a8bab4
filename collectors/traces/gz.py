"""Inflating a gzip trace under caps (a gzip bomb is never inflated whole): the one place both
the loader (load.py) and the Kineto reader (kineto.py) take it from."""
from __future__ import annotations

import gzip
import os
import types
import zlib
from collections.abc import Callable
from pathlib import Path

from .model import TraceError

_gzip: types.ModuleType
try:  # optional: Intel ISA-L inflates gzip about twice as fast as zlib
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover
    _gzip = gzip

# Caps on what a compressed trace inflates to: past either, the file is refused (a gzip bomb is
# never inflated whole). The ratio is the inflated size over the compressed file's size; it is
# not applied below RATIO_FLOOR inflated bytes, where small files may compress far.
MAX_INFLATED_ENV = "PERFWARDEN_MAX_INFLATED_BYTES"
MAX_RATIO_ENV = "PERFWARDEN_MAX_INFLATE_RATIO"
DEFAULT_MAX_INFLATED = 32 << 30
DEFAULT_MAX_RATIO = 100.0
RATIO_FLOOR = 64 << 20
INFLATE_CHUNK = 1 << 24


def inflate_caps(path: Path) -> tuple[int, float]:
    """(most inflated bytes, highest ratio) from the environment, or the defaults; a bad
    setting is a TraceError naming the file it stops."""
    out: list[float] = []
    for env, default in ((MAX_INFLATED_ENV, DEFAULT_MAX_INFLATED),
                         (MAX_RATIO_ENV, DEFAULT_MAX_RATIO)):
        raw = os.environ.get(env, "").strip()
        try:
            value = float(raw) if raw else float(default)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise TraceError(f"{path}: {env}={raw!r} must be a positive number")
        out.append(value)
    return int(out[0]), out[1]


def inflate(path: Path, write: Callable[[bytes], object]) -> int:
    """Inflate the gzip file `path` a chunk at a time into `write`; returns the inflated size.
    TraceError for broken gzip data, or once the inflated bytes pass either cap (inflate_caps):
    no more than the cap plus one byte is ever read."""
    limit, ratio = inflate_caps(path)
    size = path.stat().st_size
    by_ratio = max(RATIO_FLOOR, int(ratio * size))
    allowed = min(limit, by_ratio)
    n = 0
    try:
        with _gzip.open(path, "rb") as g:
            while data := g.read(min(INFLATE_CHUNK, allowed - n + 1)):
                n += len(data)
                if n > allowed:
                    why = (f"the cap of {limit:,} bytes ({MAX_INFLATED_ENV})" if allowed == limit
                           else f"{ratio:g} times its {size:,} compressed bytes ({MAX_RATIO_ENV})")
                    raise TraceError(f"{path}: refused: its gzip data inflates past {why}")
                write(data)
    except (OSError, EOFError, zlib.error) as e:
        raise TraceError(f"{path}: broken gzip data ({e})") from None
    return n
