"""Command-line values shared by the GPU-node commands (collectors/cli/) and the server's
(service/cli*.py): argparse value types, and `--threshold METRIC=PCT` / `--vary KEY` read in
one place. Standard library only."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from .errors import UsageError
from .metrics import parse_thresholds

ORDERS = ("overlap", "late", "serial")


def ints(text: str) -> list[int]:
    """`1,4,7,8`: positive integers."""
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def orders(text: str) -> list[str]:
    """`overlap,late`: shared-expert orders, deduplicated in the given order."""
    vals = [x.strip() for x in text.split(",") if x.strip()]
    bad = [v for v in vals if v not in ORDERS]
    if not vals or bad:
        raise argparse.ArgumentTypeError(f"expected {', '.join(ORDERS)} (comma-separated), "
                                         f"got {text!r}")
    return list(dict.fromkeys(vals))


def stream(text: str) -> tuple[int, int]:
    """`DEVICE:STREAM`."""
    try:
        d, s = text.split(":")
        return int(d), int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected DEVICE:STREAM, got {text!r}") from None


def positive(kind: type) -> Callable[[str], int | float]:
    """A positive int (`positive(int)`), or a finite float >= 0 (`positive(float)`)."""
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (v > 0 if kind is int else (v >= 0 and math.isfinite(v))):
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return v
    return parse


def thresholds(items: list[str] | None) -> dict[str, float]:
    """Every command's `--threshold METRIC=PCT` (repeatable) as a dict; CliError names the bad
    one."""
    try:
        return parse_thresholds(items)
    except ValueError as e:
        raise UsageError(f"--threshold {e}") from None


def vary_keys(items: list[str] | None) -> list[str]:
    """`--vary KEY` (repeatable, each a comma list) as one list of config keys."""
    return [k.strip() for v in items or [] for k in v.split(",") if k.strip()]


QUESTION_MAX = 50  # metrics, thresholds or vary keys a question names, at most, each


def gate_fields(metrics: list[str] | None, threshold_items: list[str] | None,
                vary_items: list[str] | None) -> dict:
    """The `metrics`, `thresholds` and `vary` of a gate request, from --metric, --threshold and
    --vary (only those that name something, each name once); UsageError past QUESTION_MAX."""
    out: dict = {"metrics": list(dict.fromkeys(m.strip() for m in metrics or [] if m.strip())),
                 "thresholds": thresholds(threshold_items),
                 "vary": list(dict.fromkeys(vary_keys(vary_items)))}
    for field, flag in (("metrics", "--metric"), ("thresholds", "--threshold"), ("vary", "--vary")):
        if len(out[field]) > QUESTION_MAX:
            raise UsageError(f"{flag}: {len(out[field])} given, at most {QUESTION_MAX}")
    return {k: v for k, v in out.items() if v}
