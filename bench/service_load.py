#!/usr/bin/env python3
"""Service speed against PostgreSQL with a large history: ingest rate over HTTP, then gate latency
p50/p99 under a steady request rate from a second process on loopback. Compared against the
issue's goals (ingest >= 500 runs/s; gate p99 < 50 ms at 50 requests/s).

    python bench/service_load.py [--runs 100000] [--samples 10] [--rate 50] [--seconds 30]
                                 [--batch 100] [--clients 8] [--workers 2] [--ingest-only]

--batch N posts N records per request to POST /api/v1/runs/batch (one transaction each), as
`perfwarden ingest` and `collect --server` do; --batch 1 posts one record per POST /api/v1/runs.

--before REV (with --ingest-only) measures the ingest twice per --repeat, alternating: the
service of commit REV (exported with `git archive`) and this tree's, which runs alert evaluation
as durable jobs in a `perfwarden worker` process beside the API; the table puts them side by
side, with how long after the last ingest response the worker had evaluated everything.

Needs PostgreSQL on 127.0.0.1:5432 (user postgres). Creates and drops database pw_bench_load.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
DB = f"pw_bench_load_{os.getpid()}"  # a database of its own: others may run this too

LOAD_SNIPPET = r"""
import json, sys, time, threading, httpx
url, rate, seconds, body = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
lat, errors = [], [0]
lock = threading.Lock()
def one(c):
    t0 = time.perf_counter()
    r = c.post("/api/v1/gate", content=body, headers={"content-type": "application/json"})
    dt = time.perf_counter() - t0
    with lock:
        if r.status_code != 200: errors[0] += 1
        lat.append(dt)
clients = [httpx.Client(base_url=url, timeout=30) for _ in range(16)]
threads, start, i = [], time.perf_counter(), 0
while time.perf_counter() - start < seconds:
    due = start + i / rate
    now = time.perf_counter()
    if due > now: time.sleep(due - now)
    t = threading.Thread(target=one, args=(clients[i % 16],)); t.start(); threads.append(t); i += 1
for t in threads: t.join()
print(json.dumps({"lat": lat, "errors": errors[0], "sent": i, "elapsed": time.perf_counter() - start}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_body(i: int, samples: int, series: int) -> dict:
    base = 1944.0 * (1 + 0.0005 * ((i * 7919) % 11 - 5))
    return {"benchmark": "load-decode", "config": {"tp": 8, "batch_size": [1, 4, 7, 8][i % 4],
                                                   "variant": i % series},
            "hardware": {"gpu": "NVIDIA H200", "gpu_count": 8}, "commit": f"{i:08x}",
            "label": f"ci-{i}", "started_at": f"2026-{1 + i % 11:02d}-{1 + i % 27:02d}T00:00:00Z",
            "metrics": {"tok_s": {"samples": [base + 0.3 * ((i + k) % 5) for k in range(samples)]},
                        "kv_capacity_tokens": {"samples": [578368]}},
            "idempotency_key": f"load-{i}"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--series", type=int, default=25)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=100, help="records per request (1: single posts)")
    ap.add_argument("--ingest-only", action="store_true", help="skip the gate latency part")
    ap.add_argument("--before", metavar="REV", help="ingest only: compare against commit REV")
    ap.add_argument("--repeat", type=int, default=2, help="with --before: passes of each")
    args = ap.parse_args()
    if args.before:
        return compare_before(args)
    with psycopg.connect(ADMIN, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        con.execute(f"CREATE DATABASE {DB}")
    url_db = f"postgresql+psycopg://postgres@127.0.0.1:5432/{DB}"
    port = free_port()
    env = {**os.environ, "PERFWARDEN_DATABASE_URL": url_db,
           "PERFWARDEN_DATA_DIR": str(ROOT / "bench" / "out" / "load-data")}
    server = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port),
                               "--migrate", "--workers", str(args.workers)], cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        # ingest
        done = [0]
        t0 = time.perf_counter()

        def ingest(worker: int) -> int:
            n = 0
            mine = list(range(worker, args.runs, args.clients))
            with httpx.Client(base_url=url, timeout=120) as c:
                for j in range(0, len(mine), args.batch):
                    chunk = [run_body(i, args.samples, args.series) for i in mine[j:j + args.batch]]
                    if args.batch == 1:
                        r = c.post("/api/v1/runs", json=chunk[0])
                    else:
                        r = c.post("/api/v1/runs/batch", json={"runs": chunk})
                    assert r.status_code in (200, 201), r.text
                    n += len(chunk)
                    done[0] += len(chunk)
                    if worker == 0 and (n // args.batch) % max(1, 2000 // args.batch) == 0:
                        el = time.perf_counter() - t0
                        print(f"ingest: {done[0]:,}/{args.runs:,} runs, {done[0] / el:,.0f} runs/s",
                              file=sys.stderr, flush=True)
            return n

        with ThreadPoolExecutor(args.clients) as ex:
            total = sum(ex.map(ingest, range(args.clients)))
        ingest_s = time.perf_counter() - t0
        with psycopg.connect(ADMIN.rsplit("/", 1)[0] + f"/{DB}", autocommit=True) as con:
            con.execute("VACUUM ANALYZE")  # as autovacuum leaves a settled production database
        if args.ingest_only:
            with psycopg.connect(ADMIN.rsplit("/", 1)[0] + f"/{DB}") as con:
                n_runs = (con.execute("SELECT count(*) FROM runs").fetchone() or (0,))[0]
            print(f"\nhistory: {n_runs:,} runs; {args.workers} uvicorn worker(s); {args.clients} "
                  f"clients; {args.batch} record(s) per request")
            print(f"ingest: {total / ingest_s:,.0f} runs/s (goal >= 500 runs/s)")
            return 0
        ids = httpx.get(f"{url}/api/v1/runs", params={"benchmark": "load-decode", "limit": 1000},
                        timeout=60).json()["data"]
        same = [r["id"] for r in ids if r["config"]["batch_size"] == 1 and r["config"]["variant"] == 0]
        httpx.post(f"{url}/api/v1/baselines", json={"name": "v17", "benchmark": "load-decode",
                                                     "run_ids": same[1:9]}, timeout=60)
        body = json.dumps({"benchmark": "load-decode", "baseline": "v17", "run_ids": [same[0]]})
        httpx.post(f"{url}/api/v1/gate", content=body, timeout=60)  # warm
        out = subprocess.run([sys.executable, "-c", LOAD_SNIPPET, url, str(args.rate),
                              str(args.seconds), body], capture_output=True, text=True, check=True)
        res = json.loads(out.stdout)
        lat = sorted(res["lat"])
        p50 = statistics.median(lat) * 1000
        p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000
        with psycopg.connect(ADMIN.rsplit("/", 1)[0] + f"/{DB}") as con:
            n_runs = (con.execute("SELECT count(*) FROM runs").fetchone() or (0,))[0]
            n_samples = (con.execute("SELECT count(*) FROM samples").fetchone() or (0,))[0]
    finally:
        server.terminate()
        server.wait(20)
    rate = total / ingest_s
    print(f"\nhistory: {n_runs:,} runs, {n_samples:,} samples in PostgreSQL; "
          f"{args.workers} uvicorn worker(s); {args.clients} ingest clients")
    print(f"{'figure':<34} {'measured':>12} {'goal':>12}")
    how = "POST /api/v1/runs" if args.batch == 1 else f"batches of {args.batch}"
    print(f"{'ingest (' + how + ')':<34} {rate:>8,.0f} r/s {'>= 500 r/s':>12}")
    print(f"{'gate p50 at ' + format(args.rate, 'g') + ' req/s':<34} {p50:>9.1f} ms {'':>12}")
    print(f"{'gate p99 at ' + format(args.rate, 'g') + ' req/s':<34} {p99:>9.1f} ms {'< 50 ms':>12}")
    print(f"gate requests: {res['sent']} sent over {res['elapsed']:.1f} s, {res['errors']} errors")
    with psycopg.connect(ADMIN, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return 0



def _pending_jobs(dsn: str) -> int:
    with psycopg.connect(dsn) as con:
        row = con.execute("SELECT count(*) FROM procrastinate_jobs WHERE status IN "
                          "('todo', 'doing')").fetchone()
    return int(row[0]) if row else 0


def ingest_pass(args, tree: Path, worker: bool) -> dict:
    """One ingest into a fresh database by the service of `tree` (with a `perfwarden worker`
    beside it when `worker`): runs/s over the request path, and for the worker how long after
    the last response the queue was empty (every evaluation done)."""
    with psycopg.connect(ADMIN, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        con.execute(f"CREATE DATABASE {DB}")
    dsn = ADMIN.rsplit("/", 1)[0] + f"/{DB}"
    env = {**os.environ, "PERFWARDEN_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{DB}",
           "PERFWARDEN_DATA_DIR": str(ROOT / "bench" / "out" / "load-data"), "PYTHONPATH": str(tree)}
    port = free_port()
    procs = [subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port),
                               "--migrate", "--workers", str(args.workers)], cwd=tree, env=env)]
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        if worker:
            procs.append(subprocess.Popen([sys.executable, "-m", "service.cli", "worker"],
                                          cwd=tree, env=env, stderr=subprocess.DEVNULL))
        t0 = time.perf_counter()

        def ingest(client: int) -> int:
            mine = list(range(client, args.runs, args.clients))
            with httpx.Client(base_url=url, timeout=300) as c:
                for j in range(0, len(mine), args.batch):
                    chunk = [run_body(i, args.samples, args.series) for i in mine[j:j + args.batch]]
                    r = c.post("/api/v1/runs/batch", json={"runs": chunk})
                    assert r.status_code in (200, 201), r.text
            return len(mine)

        with ThreadPoolExecutor(args.clients) as ex:
            total = sum(ex.map(ingest, range(args.clients)))
        ingest_s = time.perf_counter() - t0
        caught_up = None
        if worker:
            while _pending_jobs(dsn):
                time.sleep(0.2)
            caught_up = time.perf_counter() - t0 - ingest_s
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(30)
        with psycopg.connect(ADMIN, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return {"rate": total / ingest_s, "seconds": ingest_s, "caught_up": caught_up}


def compare_before(args) -> int:
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pw-before-") as tmp:
        archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        import io

        tarfile.open(fileobj=io.BytesIO(archive)).extractall(tmp, filter="data")
        rows: list[tuple[str, dict]] = []
        for k in range(args.repeat):
            for name, tree, worker in ((f"before ({args.before})", Path(tmp), False),
                                       ("after (this tree)", ROOT, True)):
                res = ingest_pass(args, tree, worker)
                print(f"pass {k + 1}: {name}: {res['rate']:,.0f} runs/s", file=sys.stderr, flush=True)
                rows.append((name, res))
    print(f"\n{args.runs:,} runs, {args.samples} samples each, {args.series * 4} series; batches of "
          f"{args.batch}, {args.clients} clients, {args.workers} uvicorn workers; PostgreSQL")
    print(f"{'service':<26} {'pass':>4} {'ingest':>12} {'ingest time':>12} {'evaluations done':>22}")
    for i, (name, r) in enumerate(rows):
        done = "in the request's worker" if r["caught_up"] is None else \
            f"{r['caught_up']:.1f} s after the last"
        print(f"{name:<26} {i // 2 + 1:>4} {r['rate']:>8,.0f} r/s {r['seconds']:>10.1f} s {done:>22}")
    for name in dict(rows):
        best = max(r["rate"] for n, r in rows if n == name)
        print(f"best of {args.repeat}, {name}: {best:,.0f} runs/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
