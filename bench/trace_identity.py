#!/usr/bin/env python3
"""Results must not change: every committed real trace (and the real rank sets) analyzed by
`perfwarden analyze --json` as this tree has it and as it was at REV, the JSON compared byte for
byte (gaps, overlap, step times, kernels, ranks and the ordering check: single files with the
server's preset, the rank sets also plain and with the routed_experts phase guarded).

    python bench/trace_identity.py [--before main]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trace_speed import ROOT, tree_at  # noqa: E402

CHECKS = ((), ("--guard-preset", "moe-routed"), ("--guard-range", "routed_experts"))


def cases() -> list[list[str]]:
    singles = sorted([*ROOT.glob("tests/data/*.json.gz"), *ROOT.glob("tests/data/*.sqlite"),
                      *ROOT.glob("data/h200/traces/*"), *ROOT.glob("data/h200/engines/*.gz"),
                      *ROOT.glob("data/engines/*.gz")])
    sets = [sorted(ROOT.glob("data/h200/resident/torch/traces/*.json.gz")),
            sorted(ROOT.glob("data/h200/resident/nsys/traces/*.sqlite")),
            [ROOT / "tests/data/kineto_1layer_M4.json.gz", ROOT / "tests/data/kineto_1layer_M8.json.gz"]]
    out = [[str(p), *CHECKS[1]] for p in singles]  # the server's check: steps, gaps and ordering
    out += [[*map(str, s), *c] for s in sets for c in CHECKS]
    return out


def run(tree: Path, case: list[str]) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run([sys.executable, "-m", "collectors.cli", "analyze", "--json", "--quiet",
                        "--jobs", "2", *case], env=env, capture_output=True, cwd=tree)  # -m: the cwd's tree
    return p.stdout + f"\nexit {p.returncode}".encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="main")
    args = ap.parse_args()
    old = tree_at(args.before)
    differ = 0
    for case in cases():
        same = run(old, case) == run(ROOT, case)
        differ += not same
        names = " ".join(Path(c).name if "/" in c else c for c in case)
        print(f"{'same     ' if same else 'DIFFERENT'} {names}", flush=True)
    print(f"{len(cases()) - differ} of {len(cases())} analyses identical to {args.before}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
