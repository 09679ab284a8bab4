#!/usr/bin/env python3
"""Dashboard page times with a real history in PostgreSQL (thousands of runs, tens of thousands of
samples), against a naive peer: loading every sample of the benchmark, which is what a page that
did not use the per-run figures would have to do.

    python bench/dashboard_speed.py [--runs 5000]

Needs PostgreSQL on 127.0.0.1:5432 (user postgres); creates and drops database pw_bench_dash.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
DB = "pw_bench_dash"


def main() -> int:
    from fastapi.testclient import TestClient
    from sqlalchemy import select

    from bench.service_load import run_body
    from service.config import Settings
    from service.db import transaction
    from service.main import create_app
    from service.migrate import upgrade
    from service.models import Sample
    from service.repositories import ingest
    from service.schemas import RunIn

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5000)
    ap.add_argument("--series", type=int, default=32,
                    help="config variants: the runs fall into lcm(4, this) series (32: 32 series)")
    ap.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = ap.parse_args()
    with psycopg.connect(ADMIN, autocommit=True) as con:
        con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        con.execute(f"CREATE DATABASE {DB}")
    url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{DB}"
    upgrade(url)
    app = create_app(Settings(database_url=url, data_dir=ROOT / "bench" / "out" / "dash-data"))
    t0 = time.perf_counter()
    for start in range(0, args.runs, 500):
        with transaction(app.state.sessions) as s:
            for i in range(start, min(args.runs, start + 500)):
                body = RunIn.model_validate(run_body(i, 10, args.series))
                ingest.create_run(s, body, ingest.body_hash(body))
        print(f"history: {min(args.runs, start + 500):,}/{args.runs:,} runs", file=sys.stderr)
    print(f"stored {args.runs:,} runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    c = TestClient(app)
    ids = [r["id"] for r in c.get("/api/v1/runs", params={"benchmark": "load-decode",
                                                           "limit": 40}).json()["data"]]
    c.post("/api/v1/baselines", json={"name": "v17", "benchmark": "load-decode",
                                      "run_ids": ids[4:40]})
    pages = {"/": "/", "/benchmarks/{b}": "/benchmarks/load-decode",
             "/benchmarks/{b}?series=": "/benchmarks/load-decode?series=1",
             "/benchmarks/{b}/matrix": "/benchmarks/load-decode/matrix",
             "/compare": f"/compare?benchmark=load-decode&baseline=v17&run_ids={ids[0]}",
             "/runs/{id}": f"/runs/{ids[0]}", "/alerts": "/alerts"}
    rows = []
    for name, path in pages.items():
        times = []
        for _ in range(6):
            t = time.perf_counter()
            r = c.get(path)
            times.append(time.perf_counter() - t)
            assert r.status_code == 200, (path, r.status_code)
        # the first request after the history changed computes the change points and the
        # attribution fits; later ones reuse them until a run is stored or deleted
        rows.append((name, times[0] * 1000, statistics.median(times[1:]) * 1000))
    with transaction(app.state.sessions) as s:
        t = time.perf_counter()
        n = len(s.execute(select(Sample.run_id, Sample.value).where(Sample.metric == "tok_s")).all())
        naive = (time.perf_counter() - t) * 1000
    nseries = len(c.get("/api/v1/changepoints", params={"benchmark": "load-decode",
                                                          "metric": "tok_s"}).json()["series"])
    print(f"\n{args.runs:,} runs in {nseries} series, {n:,} tok_s samples in PostgreSQL")
    print(f"{'page':<28} {'first ms':>10} {'median ms':>10}")
    for name, first, ms in rows:
        print(f"{name:<28} {first:>10.1f} {ms:>10.1f}")
    print(f"{'peer: read every tok_s sample':<28} {naive:>10.1f}   (before any drawing)")
    app.state.engine.dispose()
    if not args.keep:
        with psycopg.connect(ADMIN, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
