"""The one user-facing error of every command line (collectors and service alike)."""
from __future__ import annotations


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""
