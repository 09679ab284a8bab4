#!/usr/bin/env python3
"""Times the dashboard's pages against an existing database with the code of one source tree
(`--root`: this checkout, or an older commit's files): each page's first request in a fresh
process, then the median of `--repeat` more. Prints one JSON line {page: [first_ms, median_ms]}.
Run by bench/dashboard_speed.py, which builds the database and compares two trees."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="the source tree whose service/ to import")
    ap.add_argument("--url", required=True, help="SQLAlchemy URL of the database")
    ap.add_argument("--pages", required=True, help='JSON {"name": "/path?query"}')
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.root).resolve()))
    from fastapi.testclient import TestClient

    from service.config import Settings
    from service.main import create_app

    app = create_app(Settings(database_url=args.url, data_dir=Path(args.data_dir),
                              jobs_in_process=False))
    out = {}
    with TestClient(app) as c:
        for name, path in json.loads(args.pages).items():
            times = []
            for _ in range(1 + args.repeat):
                t = time.perf_counter()
                r = c.get(path)
                times.append((time.perf_counter() - t) * 1000)
                if r.status_code != 200:
                    print(f"{path}: HTTP {r.status_code}: {r.text[:300]}", file=sys.stderr)
                    return 1
            out[name] = [times[0], statistics.median(times[1:])]
    app.state.engine.dispose()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
