#!/usr/bin/env python3
"""How long a sandboxed timeline parse (service/traces/analysis.timeline_of, the run page's)
takes at SCHED_IDLE, as a trace analysis job runs, and at the caller's own priority, as the run
page asks for it, on a quiet machine and beside BUSY processes that each keep a core busy at
normal priority (a loaded CI runner, a server beside a benchmark). Best of --repeat, per case:

    python bench/busy_cores.py --busy 2 --repeat 2
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TRACE = ROOT / "data" / "h200" / "engines" / "nsys-joined-eager.sqlite.gz"


def _spin() -> None:
    while True:
        pass


def _parse(idle: bool) -> float:
    from service.sandbox import sandboxed
    from service.traces import analysis

    t0 = time.perf_counter()
    sandboxed(lambda: analysis._timeline(TRACE, TRACE.name, 5), TRACE.stat().st_size, idle=idle)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 2,
                    help="busy processes beside the parse (default: one per core)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("TMPDIR", tempfile.gettempdir())
    print(f"timeline of {TRACE.name}, {os.cpu_count()} cores, best of {args.repeat}", flush=True)
    print(f"{'beside':>16} {'SCHED_IDLE (job)':>18} {'caller (page)':>15}")
    for busy in (0, args.busy):
        procs = [mp.get_context("fork").Process(target=_spin, daemon=True) for _ in range(busy)]
        for p in procs:
            p.start()
        try:
            time.sleep(0.5 if busy else 0)
            idle = min(_parse(True) for _ in range(args.repeat))
            own = min(_parse(False) for _ in range(args.repeat))
        finally:
            for p in procs:
                p.kill()
                p.join()
        print(f"{f'{busy} busy':>16} {idle:>16.2f} s {own:>13.2f} s", flush=True)


if __name__ == "__main__":
    main()
