#!/usr/bin/env python3
"""What a server process's settling is worth (service/serving.py, settle): statsmodels' Holm
correction runs a full garbage collection on every call, which walks every object the process
holds. In a process holding the app and the committed H200 runs on SQLite, side by side in one
run: one Holm call (statsmodels' multipletests) and GET /api/v1/explain on the committed
matrix, unsettled (the peer) and settled. Best of --repeat passes, each a fresh process; each
figure the median of --calls calls.

    python bench/settle.py [--repeat 2] [--calls 7]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_PASS = """
import gc, json, statistics, sys, time
from pathlib import Path
from fastapi.testclient import TestClient
from statsmodels.stats.multitest import multipletests
from service.config import Settings
from service.main import create_app
from service.migrate import upgrade
from service.seed import seed
from service.serving import settle

folder, calls = Path(sys.argv[1]), int(sys.argv[2])
url = f"sqlite:///{folder / 'pw.db'}"
upgrade(url)
settings = Settings(database_url=url, data_dir=folder / "data", bind_host="127.0.0.1")
seed(settings, "data/h200")
app = create_app(settings)

def median_ms(work):
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        work()
        out.append(1000 * (time.perf_counter() - t))
    return statistics.median(out)

def holm():
    multipletests([0.01, 0.02, 0.2, 0.5], method="holm")

with TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 5000)) as c:
    def explain():
        r = c.get("/api/v1/explain", params={"benchmark": "moe-decode-matrix"})
        assert r.status_code == 200, r.text[:200]
    explain()  # its first answer parses the matrix's traces: not what is measured
    objects = len(gc.get_objects())
    out = {"objects": objects, "holm": [median_ms(holm)], "explain": [median_ms(explain)]}
    out["frozen"] = settle()
    out["holm"].append(median_ms(holm))
    out["explain"].append(median_ms(explain))
print(json.dumps(out))
"""


def one_pass(calls: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="pw-settle-") as folder:
        env = {**os.environ, "PERFWARDEN_JOBS_IN_PROCESS": "0"}
        r = subprocess.run([sys.executable, "-c", ONE_PASS, folder, str(calls)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise SystemExit(f"a pass failed:\n{r.stderr[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--calls", type=int, default=7)
    args = ap.parse_args()
    passes = []
    for i in range(args.repeat):
        print(f"pass {i + 1}/{args.repeat} ...", file=sys.stderr, flush=True)
        passes.append(one_pass(args.calls))
    best = {k: [min(p[k][j] for p in passes) for j in range(2)] for k in ("holm", "explain")}
    print(f"objects the process holds: {passes[0]['objects']:,}; frozen by settle: "
          f"{passes[0]['frozen']:,}")
    print(f"{'median of ' + str(args.calls) + ' calls, best of ' + str(args.repeat):<36}"
          f"{'unsettled (peer)':>18}{'settled':>10}{'x':>8}")
    for name, label in (("holm", "statsmodels Holm, one call"),
                        ("explain", "GET /api/v1/explain (matrix)")):
        before, after = best[name]
        print(f"{label:<36}{before:>15.2f} ms{after:>7.2f} ms{before / max(after, 1e-3):>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
