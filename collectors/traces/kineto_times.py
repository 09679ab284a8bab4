"""Kineto times: exact nanoseconds from a number's text, and the test for absolute epoch
microseconds (older PyTorch), which float64 does not hold to the nanosecond."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

# float64 microseconds times 1000 stay exact nanoseconds below this magnitude
EXACT_LIMIT_US = 2.0 ** 53 / 1000


def exact_ns(v: Any) -> int:
    """A JSON number's text (microseconds) as exact integer nanoseconds (rounded half up)."""
    if isinstance(v, bool):
        raise TypeError("a boolean is no time")
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, Decimal):
        return int((v * 1000).to_integral_value(ROUND_HALF_UP))
    s = bytes(v).strip().strip(b'"') if not isinstance(v, str) else v.strip().encode()
    if s[:1] == b"-" or b"e" in s or b"E" in s:
        return int((Decimal(s.decode()) * 1000).to_integral_value(ROUND_HALF_UP))
    ip, _, fp = s.partition(b".")
    return int(ip or b"0") * 1000 + (int((fp + b"0000")[:4]) + 5) // 10


def needs_exact(events: list[Any]) -> bool:
    return first_exact(events) is not None


def first_exact(events: list[Any]) -> int | None:
    """Index of the first event whose time is absolute epoch microseconds, if any."""
    return first_exact_times([e.ts for e in events])


def first_exact_times(times: list[Any]) -> int | None:
    """Index of the first time that is absolute epoch microseconds, if any."""
    for i, ts in enumerate(times):
        try:
            if float(ts) >= EXACT_LIMIT_US:
                return i
        except (TypeError, ValueError):
            continue
    return None
