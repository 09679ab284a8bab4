#!/usr/bin/env python3
"""Service speed against PostgreSQL with a large history: ingest rate over HTTP (overall and per
window of --window runs, to show whether it holds as the history grows), then gate latency
p50/p99 under a steady request rate from a second process on loopback. Compared against the
issue's goals (ingest >= 2,000 runs/s to the last run; gate p99 < 50 ms at 50 requests/s).

    python bench/service_load.py [--runs 100000] [--samples 10] [--rate 50] [--seconds 30]
                                 [--batch 100] [--clients 4] [--workers 2] [--window 100000]
                                 [--ingest-only] [--traces 8 --trace-mb 251]
                                 [--before REV --repeat 2]

--batch N posts N records per request to POST /api/v1/runs/batch (one transaction each), as
`perfwarden ingest` and `collect --server` do. A `perfwarden worker` runs beside the API (alert
evaluation and trace analysis are durable jobs); the table says how long after the last ingest
response its queue was empty. --traces N measures the gate a second time while an N-rank
Kineto trace set of --trace-mb MB per file (bench/trace_speed.py's builder) is uploaded, and
waits for its analysis.

--before REV measures each pass twice per --repeat, alternating: the service of commit REV
(exported with `git archive`) and this tree's, each on a fresh database; the table puts them
side by side.

Needs PostgreSQL on 127.0.0.1:5432 (user postgres). Creates and drops database pw_bench_load_PID.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
DB = f"pw_bench_load_{os.getpid()}"  # a database of its own: others may run this too
DSN = ADMIN.rsplit("/", 1)[0] + f"/{DB}"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)  # runs arrive in time order, as CI posts them

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


def wait_healthy(url: str, proc: subprocess.Popen | None = None, timeout_s: float = 60.0) -> bool:
    """True once `url`'s health check answers 200; False where `proc` ends or `timeout_s`
    passes first."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return False


def run_body(i: int, samples: int, series: int) -> dict:
    base = 1944.0 * (1 + 0.0005 * ((i * 7919) % 11 - 5))
    return {"benchmark": "load-decode", "config": {"tp": 8, "batch_size": [1, 4, 7, 8][i % 4],
                                                   "variant": i % series},
            "hardware": {"gpu": "NVIDIA H200", "gpu_count": 8}, "commit": f"{i:08x}",
            "label": f"ci-{i}", "started_at": (T0 + timedelta(seconds=i)).isoformat(),
            "metrics": {"tok_s": {"samples": [base + 0.3 * ((i + k) % 5) for k in range(samples)]},
                        "kv_capacity_tokens": {"samples": [578368]}},
            "idempotency_key": f"load-{i}"}


def _admin(sql: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as con:
        con.execute(sql)


def start_service(tree: Path, workers: int) -> tuple[list[subprocess.Popen], str]:
    """The API of `tree` on a fresh database, and a `perfwarden worker` when the tree has
    durable jobs. Returns the processes and the URL."""
    _admin(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    _admin(f"CREATE DATABASE {DB}")
    env = {**os.environ, "PERFWARDEN_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{DB}",
           "PERFWARDEN_DATA_DIR": str(ROOT / "bench" / "out" / "load-data"), "PYTHONPATH": str(tree)}
    port = free_port()
    procs = [subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port),
                               "--migrate", "--workers", str(workers)], cwd=tree, env=env)]
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, procs[0], 60.0)
    if (tree / "service" / "jobs").is_dir():
        procs.append(subprocess.Popen([sys.executable, "-m", "service.cli", "worker"],
                                      cwd=tree, env=env, stderr=subprocess.DEVNULL))
    return procs, url


def stop_service(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        p.terminate()
        p.wait(30)
    _admin(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


def _rate(a: tuple[int, float], b: tuple[int, float]) -> float:
    return (b[0] - a[0]) / max(b[1] - a[1], 1e-9)


def ingest(args, url: str) -> dict:
    """Post the runs from --clients threads; runs/s overall and per window of --window runs."""
    t0 = time.perf_counter()
    done, marks = [0], [(0, 0.0)]
    lock = threading.Lock()

    def client(k: int) -> int:
        mine = list(range(k, args.runs, args.clients))
        with httpx.Client(base_url=url, timeout=300) as c:
            for j in range(0, len(mine), args.batch):
                chunk = [run_body(i, args.samples, args.series) for i in mine[j:j + args.batch]]
                r = c.post("/api/v1/runs/batch", json={"runs": chunk})
                assert r.status_code in (200, 201), r.text
                with lock:
                    done[0] += len(chunk)
                    if done[0] - marks[-1][0] >= args.window:
                        marks.append((done[0], time.perf_counter() - t0))
                        print(f"  {done[0]:,} runs: {_rate(marks[-2], marks[-1]):,.0f} runs/s in "
                              "the last window", file=sys.stderr, flush=True)
        return len(mine)

    with ThreadPoolExecutor(args.clients) as ex:
        total = sum(ex.map(client, range(args.clients)))
    seconds = time.perf_counter() - t0
    if marks[-1][0] < total:
        marks.append((total, seconds))
    return {"rate": total / seconds, "seconds": seconds,
            "windows": [_rate(a, b) for a, b in zip(marks, marks[1:])]}


def _pending_jobs() -> int:
    with psycopg.connect(DSN) as con:
        row = con.execute("SELECT count(*) FROM procrastinate_jobs WHERE status IN "
                          "('todo', 'doing')").fetchone()
    return int(row[0]) if row else 0


def wait_for_jobs(timeout_s: float = 3600) -> float:
    t0 = time.perf_counter()
    while _pending_jobs() and time.perf_counter() - t0 < timeout_s:
        time.sleep(0.2)
    return time.perf_counter() - t0


def upload_traces(url: str, run_id: int, ranks: int, mb: int) -> threading.Thread:
    """A thread that uploads an `ranks`-file Kineto set (trace_speed.py's builder) to a run."""
    sys.path.insert(0, str(ROOT / "bench"))
    from trace_speed import build_kineto, build_rank_set

    folder = build_rank_set(build_kineto(mb), ranks)

    def go() -> None:
        with httpx.Client(base_url=url, timeout=600) as c:
            for r in range(ranks):
                with open(folder / f"rank{r}.json", "rb") as f:
                    resp = c.post(f"/api/v1/runs/{run_id}/traces",
                                  params={"filename": f"rank{r}.json", "set_size": ranks},
                                  content=f)
                assert resp.status_code in (200, 202), resp.text

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def gate(args, url: str, traces: int = 0) -> dict:
    """Gate p50/p99 at --rate requests/s for --seconds (with `traces`, while a trace set of that
    many ranks is uploaded and analyzed)."""
    ids = httpx.get(f"{url}/api/v1/runs", params={"benchmark": "load-decode", "limit": 1000},
                    timeout=60).json()["data"]
    same = [r["id"] for r in ids if r["config"]["batch_size"] == 1 and r["config"]["variant"] == 0]
    httpx.post(f"{url}/api/v1/baselines", json={"name": "v17", "benchmark": "load-decode",
                                                 "run_ids": same[1:9]}, timeout=60)
    body = json.dumps({"benchmark": "load-decode", "baseline": "v17", "run_ids": [same[0]]})
    httpx.post(f"{url}/api/v1/gate", content=body, timeout=60)  # warm
    uploads = upload_traces(url, same[-1], traces, args.trace_mb) if traces else None
    out = subprocess.run([sys.executable, "-c", LOAD_SNIPPET, url, str(args.rate),
                          str(args.seconds), body], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout)
    if uploads is not None:
        uploads.join()
    lat = sorted(res["lat"])
    return {"p50": statistics.median(lat) * 1000,
            "p99": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000,
            "sent": res["sent"], "errors": res["errors"]}


def one_pass(args, tree: Path) -> dict:
    procs, url = start_service(tree, args.workers)
    try:
        res = ingest(args, url)
        res["caught_up"] = wait_for_jobs() if len(procs) > 1 else None
        with psycopg.connect(DSN, autocommit=True) as con:
            con.execute("VACUUM ANALYZE")  # as autovacuum leaves a settled production database
        if not args.ingest_only:
            res.update(gate(args, url))
            if args.traces:
                t0 = time.perf_counter()
                res["traces"] = gate(args, url, args.traces)
                wait_for_jobs()  # (before 2026-12-02 this added the wait twice)
                res["traces"]["analyzed_s"] = time.perf_counter() - t0
    finally:
        stop_service(procs)
    return res


def report(args, rows: list[tuple[str, dict]]) -> None:
    print(f"\n{args.runs:,} runs, {args.samples} samples each, {args.series * 4} series; batches of "
          f"{args.batch}, {args.clients} clients, {args.workers} uvicorn workers; PostgreSQL"
          + (f"; gate measured, then again while {args.traces} rank traces of {args.trace_mb} MB were "
             "uploaded and analyzed" if args.traces and not args.ingest_only else ""))
    print(f"{'service':<26} {'pass':>4} {'ingest':>12} {'ingest time':>12} {'jobs done':>16} "
          f"{'gate p50':>10} {'gate p99':>10}" + (f" {'p50 traces':>11} {'p99 traces':>11} "
                                                  f"{'analyzed':>9}" if args.traces else ""))
    for i, (name, r) in enumerate(rows):
        jobs = "-" if r["caught_up"] is None else f"+{r['caught_up']:.1f} s"
        p50 = f"{r['p50']:.1f} ms" if "p50" in r else "-"
        p99 = f"{r['p99']:.1f} ms" if "p99" in r else "-"
        k = i // (2 if args.before else 1) + 1
        t = r.get("traces")
        print(f"{name:<26} {k:>4} {r['rate']:>8,.0f} r/s {r['seconds']:>10.1f} s {jobs:>16} "
              f"{p50:>10} {p99:>10}" + (f" {t['p50']:>8.1f} ms {t['p99']:>8.1f} ms "
                                        f"{t['analyzed_s']:>7.1f} s" if t else ""))
    print(f"\nruns/s per window of {args.window:,} runs (goal: >= 2,000 to the last run):")
    for name, r in rows:
        print(f"{name:<26} " + " ".join(f"{w:>6,.0f}" for w in r["windows"]))
    for name in dict(rows):
        mine = [r for n, r in rows if n == name]
        line = (f"best of {len(mine)}, {name}: {max(r['rate'] for r in mine):,.0f} runs/s "
                f"overall, {max(r['windows'][-1] for r in mine):,.0f} in the last window")
        if "p99" in mine[0]:
            line += f", gate p99 {min(r['p99'] for r in mine):.1f} ms (goal < 50 ms)"
        if "traces" in mine[0]:
            line += (f", {min(r['traces']['p99'] for r in mine):.1f} ms while {args.traces} "
                     "rank traces were uploaded and analyzed")
        print(line)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--series", type=int, default=25)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=100, help="records per request")
    ap.add_argument("--window", type=int, default=100_000, help="runs per printed window")
    ap.add_argument("--ingest-only", action="store_true", help="skip the gate latency part")
    ap.add_argument("--traces", type=int, default=0, help="rank traces uploaded during the gate")
    ap.add_argument("--trace-mb", type=int, default=251, help="size of each rank trace")
    ap.add_argument("--before", metavar="REV", help="compare against the service of commit REV")
    ap.add_argument("--repeat", type=int, default=1, help="passes of each service")
    args = ap.parse_args()
    rows: list[tuple[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="pw-before-") as tmp:
        trees = [("after (this tree)", ROOT)]
        if args.before:
            archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, check=True,
                                     capture_output=True).stdout
            tarfile.open(fileobj=io.BytesIO(archive)).extractall(tmp, filter="data")
            trees.insert(0, (f"before ({args.before})", Path(tmp)))
        for k in range(args.repeat):
            for name, tree in trees:
                res = one_pass(args, tree)
                print(f"pass {k + 1}: {name}: {res['rate']:,.0f} runs/s", file=sys.stderr,
                      flush=True)
                rows.append((name, res))
    report(args, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
