"""`perfwarden seed DIR`'s body: the run records (and their traces) under a folder stored, their
alerts evaluated."""
from __future__ import annotations

import argparse
import sys

from ...migrate import upgrade
from ...seed import seed
from .local import settings


def cmd_seed(args: argparse.Namespace) -> int:
    s = settings()
    upgrade(s.database_url)
    n = seed(s, args.dir, progress=True)
    print(f"stored {n} run(s) from {args.dir}", file=sys.stderr)
    return 0
