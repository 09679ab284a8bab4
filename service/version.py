"""The one source of the version: the installed package's metadata (pyproject.toml)."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("perfwarden")
except PackageNotFoundError:  # a source tree that was never installed
    VERSION = "0+unknown"
