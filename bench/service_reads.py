#!/usr/bin/env python3
"""The service's heaviest reads on a large history, on PostgreSQL: GET /api/v1/changepoints and
the series page of a benchmark with --runs runs (cold: the first read after the history changed;
warm: the median of the reads after it), the index page with --benchmarks benchmarks (each with a
baseline and a newer run), and the gate's p50/p99 for another benchmark while --hammer clients
read those pages in a loop. Best of --repeat passes, against the goals (reads < 300 ms warm and
< 2 s cold, index < 500 ms, gate p99 < 50 ms).

    python bench/service_reads.py [--runs 100000 1000000] [--benchmarks 4000] [--repeat 2]
                                  [--hammer 4] [--rate 20] [--seconds 15] [--workers 2]
                                  [--read-workers 0] [--client-nice 0]

The first runs of each benchmark are posted over HTTP (POST /api/v1/runs/batch, so benchmark,
series and registry rows are the service's own); the rest of the history is copied from them
in SQL (INSERT ... SELECT over generate_series: the run rows and their per-run figures, no
samples; the history reads none), with a 3% step in the last 30% of each series, so the change
points have something to find. Between passes one more run is posted over HTTP, so each pass's
cold read follows a real ingest.

Needs PostgreSQL on 127.0.0.1:5432 (user postgres). Creates and drops database pw_bench_reads_PID;
with PW_BENCH_READS_DB=NAME set, that database is filled once, reused and kept.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_load import T0, free_port, run_body, wait_healthy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
DB = os.environ.get("PW_BENCH_READS_DB") or f"pw_bench_reads_{os.getpid()}"
KEEP = "PW_BENCH_READS_DB" in os.environ  # a named database is kept and reused (filled once)
DSN = ADMIN.rsplit("/", 1)[0] + f"/{DB}"
BIG = "load-decode"
SERIES = 25  # variants; times 4 batch sizes = 100 series
SEEDED = 400  # runs of the big benchmark posted over HTTP (4 per series)

HAMMER = r"""
import sys, time, httpx
url, seconds, paths = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
n, t0 = 0, time.perf_counter()
with httpx.Client(base_url=url, timeout=120) as c:
    while time.perf_counter() - t0 < seconds:
        assert c.get(paths[n % len(paths)]).status_code == 200
        n += 1
print(n)
"""

GATE = r"""
import json, sys, time, threading, httpx
url, rate, seconds, body = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
lat, errors, lock = [], [0], threading.Lock()
def one(c):
    t0 = time.perf_counter()
    r = c.post("/api/v1/gate", content=body, headers={"content-type": "application/json"})
    with lock:
        lat.append(time.perf_counter() - t0)
        errors[0] += r.status_code != 200
clients = [httpx.Client(base_url=url, timeout=60) for _ in range(8)]
threads, start, i = [], time.perf_counter(), 0
while time.perf_counter() - start < seconds:
    due = start + i / rate
    if due > time.perf_counter(): time.sleep(due - time.perf_counter())
    t = threading.Thread(target=one, args=(clients[i % 8],)); t.start(); threads.append(t); i += 1
for t in threads: t.join()
print(json.dumps({"lat": lat, "errors": errors[0]}))
"""


def _exists() -> bool:
    with psycopg.connect(ADMIN, autocommit=True) as con:
        return con.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB,)).fetchone() \
            is not None


def _admin(sql: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as con:
        con.execute(sql)


def _sql(sql: str, *params) -> None:
    with psycopg.connect(DSN, autocommit=True) as con:
        con.execute(sql, params)


def start(workers: int, read_workers: int = 0) -> tuple[subprocess.Popen, str]:
    if not KEEP or not _exists():
        _admin(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        _admin(f"CREATE DATABASE {DB}")
    env = {**os.environ, "PERFWARDEN_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{DB}",
           "PERFWARDEN_DATA_DIR": str(ROOT / "bench" / "out" / "reads-data"),
           "PERFWARDEN_JOBS_IN_PROCESS": "0", "PYTHONPATH": str(ROOT)}
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port),
                             "--migrate", "--workers", str(workers),
                             "--read-workers", str(read_workers)], cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    if wait_healthy(url, proc, 120.0):
        return proc, url
    proc.kill()
    raise SystemExit("the service did not start")


def post(url: str, runs: list[dict]) -> list[int]:
    r = httpx.post(f"{url}/api/v1/runs/batch", json={"runs": runs}, timeout=300)
    assert r.status_code in (200, 201), r.text
    return list(r.json()["ids"])


def fill_big(url: str, total: int) -> None:
    """SEEDED runs over HTTP, then copies of them up to `total` runs in SQL."""
    have = _count(BIG)
    if have == 0:
        for k in range(0, SEEDED, 100):
            post(url, [run_body(i, 3, SERIES) for i in range(k, k + 100)])
        have = SEEDED
    step = int(total * 0.7)
    for lo in range(have, total, 100_000):
        hi = min(total, lo + 100_000)
        _sql(f"""
        INSERT INTO runs (benchmark_id, series_id, config, commit, branch, label, hardware,
                          environment, started_at, created_at, idempotency_key, body_sha256, extra)
        SELECT t.benchmark_id, t.series_id, t.config, lpad(to_hex(g), 8, '0'), t.branch,
               'ci-' || g, t.hardware, t.environment, %s::timestamptz + g * interval '1 second',
               now(), 'bulk-' || g, md5(g::text) || md5('x' || g), t.extra
        FROM generate_series({lo}, {hi - 1}) g
        JOIN runs t ON t.idempotency_key = 'load-' || (g %% {SEEDED})""", T0)
        _sql(f"""
        INSERT INTO run_metrics (run_id, metric, unit, direction, n, mean, median, stdev)
        SELECT r.id, m.metric, m.unit, m.direction, m.n,
               m.mean * (1 + 0.0005 * ((g::bigint * 7919) %% 11 - 5)) * (CASE WHEN g >= {step}
                   THEN 0.97 ELSE 1 END),
               m.median * (CASE WHEN g >= {step} THEN 0.97 ELSE 1 END), m.stdev
        FROM generate_series({lo}, {hi - 1}) g
        JOIN runs r ON r.idempotency_key = 'bulk-' || g
        JOIN runs t ON t.idempotency_key = 'load-' || (g %% {SEEDED})
        JOIN run_metrics m ON m.run_id = t.id""")
        print(f"  {hi:,} runs of {BIG}", file=sys.stderr, flush=True)


INDEX_SQL = (  # the index benchmarks, copied from idx-template
    """INSERT INTO benchmarks (name, created_at)
    SELECT 'idx-' || lpad(g::text, 5, '0'), now() FROM generate_series(1, {n}) g""",
    """INSERT INTO series (benchmark_id, config, config_hash, gpu, gpu_count)
    SELECT b.id, s.config, s.config_hash, s.gpu, s.gpu_count FROM benchmarks b
    CROSS JOIN (SELECT * FROM series WHERE benchmark_id =
                (SELECT id FROM benchmarks WHERE name = 'idx-template')) s
    WHERE b.name LIKE 'idx-0%%'""",
    """INSERT INTO runs (benchmark_id, series_id, config, commit, branch, label, hardware,
                      environment, started_at, created_at, idempotency_key, body_sha256, extra)
    SELECT b.id, s.id, t.config, t.commit, t.branch, t.label, t.hardware, t.environment,
           t.started_at, now(), b.name || '/' || t.id, md5(b.name || t.id) || md5(t.id::text),
           t.extra
    FROM benchmarks b JOIN series s ON s.benchmark_id = b.id
    CROSS JOIN (SELECT * FROM runs WHERE id = ANY(%s)) t WHERE b.name LIKE 'idx-0%%'""",
    """INSERT INTO run_metrics (run_id, metric, unit, direction, n, mean, median, stdev)
    SELECT r.id, m.metric, m.unit, m.direction, m.n, m.mean, m.median, m.stdev
    FROM runs r JOIN runs t ON r.idempotency_key = (SELECT name FROM benchmarks
                                                    WHERE id = r.benchmark_id) || '/' || t.id
    JOIN run_metrics m ON m.run_id = t.id WHERE t.id = ANY(%s)""",
    """INSERT INTO samples (run_id, metric, trial, value)
    SELECT r.id, m.metric, m.trial, m.value
    FROM runs r JOIN runs t ON r.idempotency_key = (SELECT name FROM benchmarks
                                                    WHERE id = r.benchmark_id) || '/' || t.id
    JOIN samples m ON m.run_id = t.id WHERE t.id = ANY(%s)""",
    """INSERT INTO baselines (benchmark_id, name, run_ids, created_at, updated_at)
    SELECT b.id, 'v1', (SELECT json_agg(r.id ORDER BY r.id) FROM (SELECT id FROM runs
        WHERE benchmark_id = b.id ORDER BY id LIMIT 3) r), t.created_at, t.updated_at
    FROM benchmarks b CROSS JOIN (SELECT * FROM baselines WHERE benchmark_id =
        (SELECT id FROM benchmarks WHERE name = 'idx-template')) t
    WHERE b.name LIKE 'idx-0%%'""",
    # the template's standing, as the service judged it, for each copy: its own baseline and
    # newest run (the copies' runs and baseline are the template's, so their verdicts are too)
    """INSERT INTO summaries (benchmark_id, kind, metric, label, runs, last_run_id, computed_at,
                           body)
    SELECT b.id, t.kind, t.metric, t.label, 4, n.id, now(),
           jsonb_set(jsonb_set(t.body::jsonb, '{{judged_with,baseline_id}}', to_jsonb(bl.id)),
                     '{{series_verdicts,0,run}}', to_jsonb(n.id))::json
    FROM benchmarks b
    JOIN baselines bl ON bl.benchmark_id = b.id
    JOIN LATERAL (SELECT max(id) AS id FROM runs WHERE benchmark_id = b.id) n ON true
    CROSS JOIN (SELECT * FROM summaries WHERE kind = 'verdicts' AND benchmark_id =
        (SELECT id FROM benchmarks WHERE name = 'idx-template')) t
    WHERE b.name LIKE 'idx-0%%'""",
)


def fill_index(url: str, count: int) -> None:
    """`count` benchmarks of one series each: 3 runs in a baseline and a newer one."""
    if _bench_count() > count:
        return
    tmpl = post(url, [{**run_body(i, 5, 1), "benchmark": "idx-template", "idempotency_key": f"tmpl-{i}",
                      "config": {"tp": 8, "batch_size": 1}}
                     for i in range(4)])
    httpx.post(f"{url}/api/v1/baselines", json={"name": "v1", "benchmark": "idx-template",
                                                 "run_ids": tmpl[:3]}, timeout=60)
    for _ in range(50):  # the index judges the template (within its budget per view)
        assert httpx.get(f"{url}/", timeout=60).status_code == 200
        if _scalar("SELECT count(*) FROM summaries s JOIN benchmarks b ON b.id = s.benchmark_id "
                   "WHERE s.kind = 'verdicts' AND b.name = 'idx-template'"):
            break
    for sql in INDEX_SQL:
        _sql(sql.format(n=count - 1), *([tmpl] * sql.count("%s")))
    print(f"  {count:,} benchmarks on the index", file=sys.stderr, flush=True)


def _scalar(sql: str) -> int:
    with psycopg.connect(DSN) as con:
        row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def _count(bench: str) -> int:
    with psycopg.connect(DSN) as con:
        row = con.execute("SELECT count(*) FROM runs JOIN benchmarks b ON b.id = benchmark_id "
                          "WHERE b.name = %s", (bench,)).fetchone()
    return int(row[0]) if row else 0


def _bench_count() -> int:
    with psycopg.connect(DSN) as con:
        row = con.execute("SELECT count(*) FROM benchmarks").fetchone()
    return int(row[0]) if row else 0


def gate_body(url: str) -> str:
    ids = post(url, [{**run_body(i, 10, 1), "benchmark": "gate-decode", "idempotency_key": f"gate-{i}"}
                    for i in range(12)])
    httpx.post(f"{url}/api/v1/baselines", json={"name": "v17", "benchmark": "gate-decode",
                                                 "run_ids": ids[:8]}, timeout=60)
    return json.dumps({"benchmark": "gate-decode", "baseline": "v17", "run_ids": ids[8:]})


def timed(url: str, path: str) -> float:
    t0 = time.perf_counter()
    r = httpx.get(url + path, timeout=300)
    assert r.status_code == 200, (path, r.status_code, r.text[:300])
    return time.perf_counter() - t0


def series_path(url: str) -> str:
    cps = httpx.get(f"{url}/api/v1/changepoints", params={"benchmark": BIG}, timeout=300).json()
    return f"/benchmarks/{BIG}?series={cps['series'][0]['series_id']}"


def measure(args, url: str, body: str, k: int, spath: str) -> dict:
    """One pass: a new run (the history changed), then cold and warm reads, then the gate
    while the hammer clients read."""
    post(url, [{**run_body(10**7 + k, 3, SERIES), "idempotency_key": f"pass-{k}"}])
    paths = {"changepoints": f"/api/v1/changepoints?benchmark={BIG}", "series page": spath,
             "index page": "/"}
    out: dict = {}
    for name, path in paths.items():
        cold = timed(url, path)
        warm = statistics.median(timed(url, path) for _ in range(5))
        out[name] = (cold, warm)
    hammer = [subprocess.Popen([*(["nice", "-n", str(args.client_nice)] if args.client_nice
                                  else []), sys.executable, "-c", HAMMER, url,
                                str(args.seconds + 2), *paths.values()],
                               stdout=subprocess.PIPE, text=True)
              for _ in range(args.hammer)]
    time.sleep(1)
    res = json.loads(subprocess.run([sys.executable, "-c", GATE, url, str(args.rate),
                                     str(args.seconds), body], capture_output=True, text=True,
                                    check=True).stdout)
    reads = sum(int(h.communicate()[0] or 0) for h in hammer)
    lat = sorted(res["lat"])
    out["gate"] = (statistics.median(lat), lat[min(len(lat) - 1, int(0.99 * len(lat)))],
                   res["errors"], len(lat), reads)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--benchmarks", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--hammer", type=int, default=4, help="clients reading the pages meanwhile")
    ap.add_argument("--rate", type=float, default=20, help="gate requests/s")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    ap.add_argument("--read-workers", type=int, default=0,
                    help="processes of the reads server (`serve --read-workers`; 0: none)")
    ap.add_argument("--client-nice", type=int, default=0,
                    help="the reloading clients' nice value (on one machine they stand for "
                    "clients on others; the gate's client always runs at 0)")
    args = ap.parse_args()
    proc, url = start(args.workers, args.read_workers)
    rows: list[tuple[int, list[dict]]] = []
    try:
        body = gate_body(url)
        fill_index(url, args.benchmarks)
        for total in sorted(args.runs):
            fill_big(url, total)
            with psycopg.connect(DSN, autocommit=True) as con:
                con.execute("VACUUM ANALYZE")
            spath = series_path(url)
            passes = [measure(args, url, body, len(rows) * 10 + k, spath)
                      for k in range(args.repeat)]
            rows.append((total, passes))
            report(args, rows[-1:])
    finally:
        proc.terminate()
        proc.wait(30)
        if not KEEP:
            _admin(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return 0


def report(args, rows) -> None:
    print(f"\nPostgreSQL, {args.workers} uvicorn workers and {args.read_workers} in a reads server, "
          f"{SERIES * 4} series in the big benchmark, "
          f"{args.benchmarks:,} benchmarks on the index; best of {args.repeat} passes (cold: the "
          "first read after an ingest; warm: median of 5 after it); gate at "
          f"{args.rate:g}/s for {args.seconds:g} s while {args.hammer} clients (nice "
          f"{args.client_nice}) read the three pages")
    print(f"{'runs':>10} {'read':<14} {'cold':>10} {'warm':>10} {'goal':>18}")
    for total, passes in rows:
        for name, goal in (("changepoints", "< 2 s / < 300 ms"), ("series page", "< 2 s / < 300 ms"),
                           ("index page", "< 500 ms")):
            cold = min(p[name][0] for p in passes) * 1000
            warm = min(p[name][1] for p in passes) * 1000
            print(f"{total:>10,} {name:<14} {cold:>7.0f} ms {warm:>7.0f} ms {goal:>18}")
        best = min(passes, key=lambda p: p["gate"][1])
        p50, p99, errors, n, reads = best["gate"]
        print(f"{total:>10,} {'gate p50/p99':<14} {p50 * 1000:>7.1f} ms {p99 * 1000:>7.1f} ms "
              f"{'p99 < 50 ms':>18}   ({n} gates, {errors} errors, {reads} page reads meanwhile)")


if __name__ == "__main__":
    sys.exit(main())
