"""The printed confidence level, one source for the statistics' sentences and every page (the
standard library alone, so the CLI and the pages print it without loading scipy)."""
from __future__ import annotations


def level_pct(alpha: float) -> str:
    """The printed confidence level of a two-sided interval at `alpha` ("95%" at 0.05)."""
    return f"{100 * (1 - alpha):.4g}%"
