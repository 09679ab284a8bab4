"""A team's main-branch history through the CI path: a served
perfwarden (its jobs in process) gets `perfwarden ingest --server` of each day's runs; a drop
raises an alert, a fix brings the level back (no alert), the same drop again raises a second
alert naming the right runs and a bisect line on the server's public URL; then an operator's
full re-evaluation, a job whose progress they follow, finds the whole history again and raises
nothing twice."""
from __future__ import annotations

import json
import socket
import subprocess
import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from tests.conftest import count_rows

from .shell import PERFWARDEN, env, run

PUBLIC = "https://perf.team.example"


def _records(start: int, level: float, n: int) -> list[dict]:
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    out = []
    for i in range(start, start + n):
        wobble = 1 + 0.0004 * ((i * 7) % 5 - 2)  # run-to-run noise of a quiet GPU node
        out.append({"benchmark": "nightly", "config": {"tp": 2, "batch_size": 8},
                    "hardware": {"gpu": "NVIDIA H200", "gpu_count": 2},
                    "commit": f"{i:04d}{'c0ffee' * 6}"[:40], "branch": "main",
                    "started_at": (t0 + timedelta(hours=i)).isoformat(),
                    "metrics": {"tok_s": {"samples": [level * wobble * f
                                                      for f in (0.9995, 1.0, 1.0005)]}}})
    return out


def _serve(settings, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen([PERFWARDEN, "serve", "--port", str(port), "--migrate"], stdout=log,
                            stderr=subprocess.STDOUT, cwd=tmp_path, env=env(
                                PERFWARDEN_DATABASE_URL=settings.database_url,
                                PERFWARDEN_DATA_DIR=str(tmp_path / "data"),
                                PERFWARDEN_JOBS_IN_PROCESS="1", PERFWARDEN_JOB_POLL_S="0.1",
                                PERFWARDEN_PUBLIC_URL=PUBLIC))
    return proc, log, f"http://127.0.0.1:{port}"


def _until(what, check, timeout_s: float = 120.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout_s:.0f} s")


@pytest.mark.one_database  # the alerts' SQL on both databases: tests/service/test_alerts.py, test_reevaluation.py
def test_a_second_regression_after_a_fix_raises_a_second_alert(settings, tmp_path):
    proc, log, url = _serve(settings, tmp_path)
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            _until("the server answers", lambda: _answers(c))
            alerts = lambda: c.get("/api/v1/alerts", params={"benchmark": "nightly"}).json()  # noqa: E731
            ids: list[int] = []
            days = [(100.0, 20), (97.0, 20), (100.0, 20), (97.0, 20)]  # drop, fix, drop again
            start = 0
            for day, (level, n) in enumerate(days):
                f = tmp_path / f"day{day}.json"
                f.write_text(json.dumps(_records(start, level, n)))
                r = run([PERFWARDEN, "ingest", str(f), "--server", url], cwd=tmp_path)
                assert r.returncode == 0, r.stderr
                ids += list(map(int, r.stdout.split()))
                start += n
                _until("the evaluation after the ingest", lambda: _idle(settings.database_url))
                want = {0: 0, 1: 1, 2: 1, 3: 2}[day]  # the fix raises nothing
                assert alerts()["count"] == want, (day, alerts())
            found = sorted(alerts()["alerts"], key=lambda a: a["run_id"])
            assert [a["run_id"] for a in found] == [ids[20], ids[60]]
            second = found[1]
            assert second["good_run_id"] == ids[59]
            assert second["last_good"] == f"run {ids[59]} at commit {_records(59, 1, 1)[0]['commit']}"
            assert second["delta_pct"] < -2.5
            assert f" --server {PUBLIC} --metric tok_s " in second["bisect"], second["bisect"]
            # the operator's full re-evaluation: 202 at once, then its progress until done
            r = c.post("/api/v1/alerts/evaluate", params={"benchmark": "nightly"})
            assert r.status_code == 202 and r.json()["state"] == "pending", r.text
            ev_url = f"/api/v1/alerts/evaluations/{r.json()['id']}"
            done = _until("the re-evaluation", lambda: (lambda e: e if e["state"] == "done" else None)(
                c.get(ev_url).json()))
            assert done["progress"] == {"series_done": 1, "series_total": 1, "runs": 80}
            assert done["new"] == [] and alerts()["count"] == 2
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _answers(c: httpx.Client) -> bool:
    try:
        return c.get("/api/v1/health").status_code == 200
    except httpx.HTTPError:
        return False


def _idle(db_url: str) -> bool:
    """The evaluation after the ingest has committed: it takes the runs off the evaluation
    inbox in the transaction that raises their alerts."""
    return count_rows(db_url, "pending_evaluations") == 0
