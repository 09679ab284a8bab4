#!/usr/bin/env python3
"""Dashboard page times at a real history size in PostgreSQL (100k runs, a million samples),
this checkout against an older commit (default: the previous one) on the same database, side by
side (the goal: every page's first and median request under 300 ms).

    python bench/dashboard_speed.py --runs 100000 [--before REV] [--passes 2]

Each pass stores one new run through the API and runs the jobs that follow an ingest (the alert
evaluation, then the refresh of the stored summaries it queues), then times every page in a fresh process per
tree: the first request, then the median of 5 more. Of the passes the best figure is kept.
Needs PostgreSQL on 127.0.0.1:5432 (user postgres); creates and drops database pw_bench_dash.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
DB = "pw_bench_dash"
URL = f"postgresql+psycopg://postgres@127.0.0.1:5432/{DB}"
LIMIT_MS = 300.0
DATA = ROOT / "bench" / "out" / "dash-data"


def fill(app, runs: int, series: int) -> None:
    """`runs` records of bench/service_load.py's shape (32 series, 10 tok/s trials each): the
    first record of each series through the repository (its series, registry rows and hashes
    as ingest makes them), the rest copied from those in SQL (generate_series: minutes of
    Python ingest become seconds), then VACUUM ANALYZE as autovacuum would."""
    from bench.service_load import run_body
    from service.db import transaction
    from service.runs import queries_ingest as repo
    from service.runs.schemas import RunIn

    t0 = time.perf_counter()
    first = [RunIn.model_validate(run_body(i, 10, series)) for i in range(min(runs, series))]
    with transaction(app.state.sessions) as s:
        repo.create_runs(s, first, [repo.body_hash(b) for b in first])
    with psycopg.connect(URL.replace("+psycopg", ""), autocommit=True) as con:
        for sql in COPY_SQL:
            con.execute(sql, {"first": len(first), "n": runs, "series": series})
        con.execute("VACUUM ANALYZE")
    print(f"stored {runs:,} runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


# run g (g >= series) copies run g % series (same series, config, hardware) with run_body(g)'s
# commit, label, time, key and tok/s trials: 1944 * (1 + 0.0005 * ((g * 7919) % 11 - 5)) +
# 0.3 * ((g + k) % 5) for trial k, and one kv_capacity_tokens sample of 578368
COPY_SQL = ("""
INSERT INTO runs (benchmark_id, series_id, config, commit, label, hardware, environment,
                  started_at, created_at, idempotency_key, body_sha256, extra)
SELECT t.benchmark_id, t.series_id, t.config, lpad(to_hex(g), 8, '0'), 'ci-' || g, t.hardware,
       t.environment, make_timestamptz(2026, 1 + g %% 11, 1 + g %% 27, 0, 0, 0, 'UTC'), now(),
       'load-' || g, md5('load-' || g) || md5('body-' || g), t.extra
FROM generate_series(%(first)s, %(n)s - 1) g
JOIN runs t ON t.idempotency_key = 'load-' || (g %% %(series)s)
ORDER BY g""", """
INSERT INTO samples (run_id, metric, trial, value)
SELECT r.id, 'tok_s', k, 1944.0 * (1 + 0.0005 * ((g * 7919) %% 11 - 5)) + 0.3 * ((g + k) %% 5)
FROM (SELECT id, substring(idempotency_key from 6)::int AS g FROM runs
      WHERE idempotency_key LIKE 'load-%%') r, generate_series(0, 9) k
WHERE r.g >= %(first)s
UNION ALL
SELECT r.id, 'kv_capacity_tokens', 0, 578368.0 FROM runs r
WHERE r.idempotency_key LIKE 'load-%%' AND substring(r.idempotency_key from 6)::int >= %(first)s""",
            """
INSERT INTO run_metrics (run_id, metric, unit, direction, n, mean, median, stdev)
SELECT s.run_id, s.metric, d.unit, d.direction, count(*), avg(s.value),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value),
       CASE WHEN count(*) > 1 THEN stddev_samp(s.value) END
FROM samples s
JOIN (SELECT DISTINCT metric, unit, direction FROM run_metrics) d ON d.metric = s.metric
WHERE NOT EXISTS (SELECT 1 FROM run_metrics m WHERE m.run_id = s.run_id)
GROUP BY s.run_id, s.metric, d.unit, d.direction""")


def arrive(client, app, i: int, series: int) -> float:
    """One new run through the API, then the jobs an ingest queues; their seconds."""
    from bench.service_load import run_body
    from service.jobs.worker import drain

    body = dict(run_body(i, 10, series), started_at="2026-12-01T00:00:00Z")
    assert client.post("/api/v1/runs", json=body).status_code == 201
    t = time.perf_counter()
    drain(app.state.settings, app.state.sessions, timeout_s=600)
    return time.perf_counter() - t


def tree_of(rev: str, into: Path) -> Path:
    """The files of commit `rev` (git archive), to import its service/ from."""
    into.mkdir(parents=True, exist_ok=True)
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                          capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=data, check=True)
    return into


def time_pages(root: Path, pages: dict[str, str]) -> dict[str, list[float]]:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "dashboard_pages.py"), "--root",
                          str(root), "--url", URL, "--pages", json.dumps(pages), "--data-dir",
                          str(DATA)], capture_output=True, text=True, cwd=root)
    if out.returncode != 0:
        raise SystemExit(f"timing the pages of {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def setup_pages(client) -> dict[str, str]:
    """A baseline of 36 runs, the H200 A/B experiment's records, and the pages to time."""
    ids = [r["id"] for r in client.get("/api/v1/runs", params={"benchmark": "load-decode",
                                                                "limit": 40}).json()["data"]]
    assert client.post("/api/v1/baselines", json={"name": "v17", "benchmark": "load-decode",
                                                   "run_ids": ids[4:40]}).status_code == 201
    recs = json.loads((ROOT / "data" / "h200" / "experiment" / "plant1.json").read_text())
    assert client.post("/api/v1/runs/batch", json={"runs": recs}).status_code == 201
    b = "/benchmarks/load-decode"
    return {"/": "/", "/benchmarks/{b}": b, "/benchmarks/{b}?series=": f"{b}?series=1",
            "/benchmarks/{b}/matrix": f"{b}/matrix",
            "/benchmarks/{b}/matrix?label=": f"{b}/matrix?label=ci-7",
            "/compare": f"/compare?benchmark=load-decode&baseline=v17&run_ids={ids[0]}",
            "/runs/{id}": f"/runs/{ids[0]}", "/experiments/{id}": "/experiments/plant1",
            "/alerts": "/alerts", "/alerts?benchmark=": "/alerts?benchmark=load-decode"}


def best(passes: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {p: [min(x[p][0] for x in passes), min(x[p][1] for x in passes)] for p in passes[0]}


def report(args, before: dict, after: dict, job_s: list[float], old: str) -> bool:
    print(f"\n{args.runs:,} runs in PostgreSQL; best of {args.passes} passes (each: one new "
          f"run, its jobs, then every page in a fresh process); limit {LIMIT_MS:.0f} ms")
    print(f"jobs after each new run (alert evaluation + stored summaries): "
          f"{', '.join(f'{s:.1f} s' for s in job_s)}")
    print(f"{'page':<32} {'before: first':>14} {'median':>8} {'after: first':>13} "
          f"{'median':>8}  verdict")
    ok = True
    for page, (first, med) in after.items():
        passed = first < LIMIT_MS and med < LIMIT_MS
        ok &= passed
        b = before.get(page)
        was = f"{b[0]:>14.1f} {b[1]:>8.1f}" if b else f"{'-':>14} {'-':>8}"
        print(f"{page:<32} {was} {first:>13.1f} {med:>8.1f}  {'PASS' if passed else 'FAIL'}")
    print(f"before: {old}; after: this checkout ({ROOT})")
    return ok


def main() -> int:
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import create_app
    from service.migrate import upgrade

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--series", type=int, default=32,
                    help="config variants: the runs fall into lcm(4, this) series (32: 32 series)")
    ap.add_argument("--before", default="HEAD~1", help="the commit to compare with")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = ap.parse_args()
    with psycopg.connect(ADMIN, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        con.execute(f"CREATE DATABASE {DB}")
    upgrade(URL)
    app = create_app(Settings(database_url=URL, data_dir=DATA, jobs_in_process=False))
    fill(app, args.runs, args.series)
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before],
                         check=True, capture_output=True, text=True).stdout.strip()
    with TestClient(app) as client, tempfile.TemporaryDirectory() as tmp:
        pages = setup_pages(client)
        old = tree_of(args.before, Path(tmp) / "before")
        befores, afters, job_s = [], [], []
        for k in range(args.passes):
            job_s.append(arrive(client, app, args.runs + k, args.series))
            befores.append(time_pages(old, pages))
            afters.append(time_pages(ROOT, pages))
    app.state.engine.dispose()
    ok = report(args, best(befores), best(afters), job_s, f"{args.before} ({sha})")
    if not args.keep:
        with psycopg.connect(ADMIN, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
