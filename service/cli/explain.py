"""`perfwarden explain BENCHMARK`: the key that explains a metric over a factorial matrix, the
kernels that tell its levels apart, the deterministic-mode runs, and the decision sentence
(GET /api/v1/explain with --server, else the local database). Its body: commands/explain.py."""
from __future__ import annotations

import argparse

from .common import command


def add_explain(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="which config key explains a metric over a factorial "
                       "matrix, the kernels that differ at its outlier levels, and the decision")
    p.add_argument("benchmark")
    p.add_argument("--metric", default="determinism",
                   help="`determinism` (non-identical repeats, the default) or a metric")
    p.add_argument("--label", action="append", help="runs of these labels (repeatable)")
    p.add_argument("--branch", help="whose history (default: the benchmark's default branch)")
    p.add_argument("--gpu", help="runs of this GPU model and count (`NVIDIA H200 x1`)")
    p.add_argument("--server", help="ask this server (default: the local database)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=command("explain", "cmd_explain"))
