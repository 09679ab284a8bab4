#!/usr/bin/env python3
"""Dashboard pages as a first-time visitor's browser loads them: headless Chromium (Debian's
`chromium`, driven by Playwright), the real H200 runs of data/h200 on SQLite, this checkout
against an older commit (default: the previous one) serving the same database, side by side.

    python bench/page_load.py [--before REV] [--loads 2]

Each tree is served by `perfwarden serve` from its own files (the older one unpacked under
bench/out/page-load/rev-REV); every page is opened once to warm the server, then `--loads`
times, each in a fresh browser context (an empty cache, as a first visit), and the best is kept.
Printed per page: DOMContentLoaded and load (ms from navigation start, the browser's own
Navigation Timing) and the bytes of script the page fetched.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from service_load import free_port, wait_healthy  # noqa: E402

OUT = ROOT / "bench" / "out" / "page-load"
CHROMIUM = "/usr/bin/chromium"
TREE = ("collectors", "service", "dashboards", "migrations", "alembic.ini")
TIMING = """() => {
  const t = performance.timing;
  const js = performance.getEntriesByType('resource').filter(e => e.initiatorType === 'script')
    .reduce((n, e) => n + (e.encodedBodySize || e.transferSize || 0), 0);
  return [t.domContentLoadedEventEnd - t.navigationStart, t.loadEventEnd - t.navigationStart, js];
}"""


def tree_at(rev: str) -> Path:
    """The files `perfwarden serve` needs, as they were at `rev`, unpacked once."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    out = OUT / f"rev-{sha}"
    if not (out / "service").exists():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, *TREE], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def serve(tree: Path, db: Path, data: Path, seed: bool) -> tuple[subprocess.Popen, str]:
    """`perfwarden serve` of `tree` on a free port, once its health check answers."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFWARDEN_")}
    env.update(PERFWARDEN_DATABASE_URL=f"sqlite:///{db}", PERFWARDEN_DATA_DIR=str(data))
    cmd = [sys.executable, "-m", "service.cli", "serve", "--port", str(port)]
    if seed:
        cmd += ["--seed", str(ROOT / "data" / "h200")]
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(OUT / f"serve-{tree.name}.log", "w"))
    url = f"http://127.0.0.1:{port}"
    if wait_healthy(url, proc, 300.0):
        return proc, url
    proc.kill()
    raise SystemExit(f"the server of {tree} did not answer: see {OUT}/serve-{tree.name}.log")


def pages(url: str) -> dict[str, str]:
    """The home page, the alerts, and the first benchmark's page and matrix."""
    home = httpx.get(url + "/", timeout=60).text
    found = re.search(r'data-benchmark="([^"]+)"', home)
    out = {"home": "/", "alerts": "/alerts"}
    if found:
        out["benchmark"] = f"/benchmarks/{found.group(1)}"
        out["matrix"] = f"/benchmarks/{found.group(1)}/matrix"
    return out


def measure(url: str, paths: dict[str, str], loads: int) -> dict[str, tuple[int, int, int]]:
    """Per page: the best DOMContentLoaded and load (ms) of `loads` fresh-context visits, and
    the script bytes fetched."""
    from playwright.sync_api import sync_playwright

    best: dict[str, tuple[int, int, int]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox",
                                                                    "--disable-gpu"])
        try:
            for name, path in paths.items():
                for k in range(1 + loads):
                    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = ctx.new_page()
                    page.goto(url + path, wait_until="load", timeout=120_000)
                    dcl, load, js = page.evaluate(TIMING)
                    ctx.close()
                    if k and (name not in best or load < best[name][1]):
                        best[name] = (int(dcl), int(load), int(js))
        finally:
            browser.close()
    return best


def run_tree(tree: Path, db: Path, data: Path, seed: bool, loads: int,
             paths: dict[str, str] | None) -> tuple[dict, dict[str, str]]:
    proc, url = serve(tree, db, data, seed)
    try:
        paths = paths or pages(url)
        return measure(url, paths, loads), paths
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD~1", metavar="REV")
    ap.add_argument("--loads", type=int, default=2, help="timed visits a page; the best is kept")
    args = ap.parse_args()
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is not installed (apt-get install chromium)")
    OUT.mkdir(parents=True, exist_ok=True)
    db, data = OUT / "perfwarden.db", OUT / "data"
    for p in OUT.glob("perfwarden.db*"):
        p.unlink()
    shutil.rmtree(data, ignore_errors=True)
    print(f"serving data/h200 on SQLite: this tree, then {args.before}", file=sys.stderr)
    now, paths = run_tree(ROOT, db, data, True, args.loads, None)
    before, _ = run_tree(tree_at(args.before), db, data, False, args.loads, paths)
    print(f"best of {args.loads} fresh-context visits; ms from navigation start; script KB")
    print(f"{'page':<11}{'DOMContentLoaded':>18}{'before':>9}{'load':>9}{'before':>9}"
          f"{'script KB':>11}{'before':>9}")
    for name in paths:
        (d, lo, js), (bd, bl, bjs) = now[name], before[name]
        print(f"{name:<11}{d:>18}{bd:>9}{lo:>9}{bl:>9}{js // 1024:>11}{bjs // 1024:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
