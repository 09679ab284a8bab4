"""Values as the pages show them: a stored trace set's ordering line, a record's nested fields,
numbers and settings, each read defensively (a stored value may be malformed)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.format import num
from service.gate.evidence import OrderingLine, ordering_line


def ordering(ts: dict) -> OrderingLine | None:
    """The ordering line of a trace set; none where its stored check is malformed."""
    try:
        return ordering_of(ts["summary"], ts["state"], ts["error"])
    except (TypeError, ValueError, AttributeError, KeyError, IndexError):
        ts["notes"] = [*ts["notes"], "ordering: malformed, not shown"]
        return None


def ordering_of(summary: Mapping[str, Any] | None, state: str = "done",
                 error: str | None = None) -> OrderingLine:
    """A trace's ordering line; a CPU trace (host operators, no device kernels) has no streams
    to order, so the check does not apply there and no flag would give it an answer."""
    line = ordering_line(summary, state, error)
    if line.verdict == "unknown" and summary and summary.get("host_ops") \
            and not summary.get("kernels"):
        return OrderingLine("unknown", line.check, "a CPU trace (host operators, no device "
                            "kernels or streams): the ordering check applies to GPU traces")
    return line


def flat(d: dict, prefix: str = "") -> list[tuple[str, object]]:
    """Nested fields as dotted keys (`plant.pct`), in the record's order; nulls left out."""
    out: list[tuple[str, object]] = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += flat(v, f"{prefix}{k}.")
        elif v is not None:
            out.append((f"{prefix}{k}", v))
    return out


def number(v: object) -> float | None:
    """A template's value as a number, or None (missing, undefined or not a number)."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def value(v: object) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (int, float)):
        return num(v, 3)
    if isinstance(v, list):
        return ", ".join(value(x) for x in v)
    return str(v)
