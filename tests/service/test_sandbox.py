"""Uploaded traces built to hang or exhaust the analysis end `failed` with their reason, once,
within the deadline, on SQLite and PostgreSQL; trace analysis runs in a lane of its own, so alert
evaluation and gate requests answer while a trace is stuck; the timeline refuses what the
analysis refused. A fuzz pass uploads malformed nsys SQLite (views, triggers, long values,
flipped bytes)."""
from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.collectors.test_untrusted_traces import (
    json_bomb,
    real_with,
    recursive_view,
    sqlite_bomb,
    with_trigger,
)
from tests.conftest import H200, LOCAL, drain_jobs, minimal_run
from tests.service.test_alerts import history

pytestmark = pytest.mark.serial  # it measures time: alone, never beside another test

REAL = H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz"


def _app(settings, **over):
    from service.main import create_app

    app = create_app(settings.model_copy(update={"jobs_in_process": False, **over}))
    return app, TestClient(app, **LOCAL)


def _upload(c, path: Path, name: str | None = None) -> tuple[int, int]:
    rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
    r = c.post(f"/api/v1/runs/{rid}/traces?filename={name or path.name}",
               content=path.read_bytes())
    assert r.status_code == 202 and r.json()["state"] == "pending", r.text
    return rid, r.json()["id"]


def _trace(c, rid: int) -> dict:
    return c.get(f"/api/v1/runs/{rid}").json()["traces"][0]


def _analysis_jobs(url: str) -> list[tuple[str, int]]:
    """(state, attempts) of every trace analysis job the queue still holds."""
    from sqlalchemy import create_engine, text

    eng = create_engine(url)
    try:
        with eng.connect() as c:
            q = ("SELECT state, attempts FROM jobs WHERE kind = 'analyze_trace'"
                 if url.startswith("sqlite") else
                 "SELECT status, attempts FROM procrastinate_jobs "
                 "WHERE task_name = 'analyze_trace'")
            return [(str(s), int(a)) for s, a in c.execute(text(q + " ORDER BY id"))]
    finally:
        eng.dispose()


def _wait(cond, what: str, timeout_s: float):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if got := cond():
            return got
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s} s: {what}")


@pytest.mark.parametrize("make,words", [
    (recursive_view, "CUPTI_ACTIVITY_KIND_KERNEL is a view"),
    (with_trigger, "has a trigger (t)"),
    (lambda p: json_bomb(p.with_suffix(".json.gz")), "inflates past 100 times"),
    (lambda p: sqlite_bomb(p.with_suffix(".sqlite.gz")), "inflates past 100 times"),
], ids=["recursive-view", "trigger", "json-gz-bomb", "sqlite-gz-bomb"])
def test_an_exploit_trace_fails_with_its_reason_and_its_timeline_is_refused(
        settings, tmp_path, make, words):
    f = make(tmp_path / "evil.sqlite")
    app, client = _app(settings, analysis_timeout_s=30.0)
    with client as c:
        rid, tid = _upload(c, f)
        t0 = time.monotonic()
        drain_jobs(app, timeout_s=60)
        assert time.monotonic() - t0 < 30
        t = _trace(c, rid)
        assert t["state"] == "failed" and words in t["error"] and f.name in t["error"], t
        assert "\n" not in t["error"]
        r = c.get(f"/api/v1/traces/{tid}/timeline")
        assert r.status_code == 422 and r.json()["error"]["code"] == "bad_trace", r.text
        assert words in r.json()["error"]["message"]
        assert c.get(f"/runs/{rid}").status_code == 200  # the run page shows the run
    app.state.engine.dispose()
    assert [a for _, a in _analysis_jobs(settings.database_url)] in ([], [1])  # tried once


def test_a_trace_past_its_deadline_fails_once_and_no_sweep_queues_it_again(settings):
    from service.jobs.sweep import requeue_pending
    from service.jobs.worker import pending

    app, client = _app(settings, analysis_timeout_s=0.02)  # a real trace takes longer
    with client as c:
        rid, _ = _upload(c, REAL, "graphs.sqlite.gz")
        drain_jobs(app, timeout_s=60)
        t = _trace(c, rid)
        assert t["state"] == "failed", t
        assert "ran past its deadline of 0.02 s (PERFWARDEN_ANALYSIS_TIMEOUT_S)" in t["error"]
        assert t["error"].startswith("graphs.sqlite.gz: ")
        jobs = _analysis_jobs(settings.database_url)
        assert [a for _, a in jobs] in ([], [1]), jobs  # one try, no retry
        s = app.state.settings
        assert requeue_pending(s, app.state.sessions) == 0  # a worker starting: nothing again
        assert pending(s, app.state.sessions) == 0
        drain_jobs(app)
        assert _trace(c, rid)["state"] == "failed"
    app.state.engine.dispose()


def test_the_timeline_of_a_pending_trace_is_parsed_under_the_deadline(settings):
    app, client = _app(settings, analysis_timeout_s=0.02)
    with client as c:  # no worker: the trace stays pending; its timeline is asked for
        _, tid = _upload(c, REAL, "graphs.sqlite.gz")
        r = c.get(f"/api/v1/traces/{tid}/timeline")
        assert r.status_code == 422 and "ran past its deadline" in r.json()["error"]["message"], r.text
    app.state.engine.dispose()
    app, client = _app(settings, analysis_timeout_s=60.0)
    with client as c:
        r = c.get(f"/api/v1/traces/{tid}/timeline")
        assert r.status_code == 200 and r.json()["ops"], r.text
    app.state.engine.dispose()


def _stuck(*args, **kwargs):
    time.sleep(3600)  # an analysis that never ends (in the forked analysis process)


def test_alerts_and_the_gate_answer_while_a_trace_analysis_is_stuck(
        settings, tmp_path, monkeypatch):
    """The in-process workers (as `perfwarden serve` runs them) with an analysis that never
    ends: the evaluation of a batch posted meanwhile raises its alert, the gate answers, and the
    stuck trace fails at its deadline."""
    from service.main import create_app
    from service.traces import analysis

    monkeypatch.setattr(analysis, "analyze_files", _stuck)
    # 5 s: the alert comes within half a second of the batch (measured alone), the stuck try is
    # seen asleep at 3 s and tried once more, so the trace fails about 8 s in
    s = settings.model_copy(update={"jobs_in_process": True, "analysis_timeout_s": 5.0,
                                    "job_poll_s": 0.2})
    app = create_app(s)
    with TestClient(app, **LOCAL) as c:
        rid, _ = _upload(c, REAL, "graphs.sqlite.gz")
        _wait(lambda: [st for st, _ in _analysis_jobs(s.database_url)] == ["doing"],
              "the analysis to start", 10)
        t0 = time.monotonic()
        runs = history(series=2, runs=40, step_series=0, step_at=25)
        r = c.post("/api/v1/runs/batch", json={"runs": runs})
        assert r.status_code == 201, r.text
        g = c.post("/api/v1/gate", json={"benchmark": "moe-decode-30",
                                         "baseline": "commit:0000024abcdef",
                                         "run_ids": [r.json()["ids"][-2]]})
        assert g.status_code == 200, g.text
        _wait(lambda: c.get("/api/v1/alerts").json()["count"] == 1, "the alert", 8)
        assert time.monotonic() - t0 < 10
        assert _trace(c, rid)["state"] == "pending"  # still stuck meanwhile
        t = _wait(lambda: (x := _trace(c, rid))["state"] != "pending" and x,
                  "the stuck trace to fail", 30)
        assert t["state"] == "failed" and "ran past its deadline of 5 s" in t["error"], t
    app.state.engine.dispose()


def _fuzz_case(rng: random.Random, path: Path) -> Path:
    """A malformed nsys export: one of a view, a trigger, a long value, flipped bytes,
    a truncated file, on a small file or a real export."""
    kind = rng.choice(["view", "trigger", "long", "flip", "cut", "sparse", "text"])
    if kind == "view":
        table = rng.choice(["NVTX_EVENTS", "StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME",
                            "TARGET_INFO_GPU"])
        return real_with(path, f"CREATE VIEW {table}_v AS SELECT 1; "
                               f"DROP TABLE IF EXISTS {table}; "
                               f"CREATE VIEW {table} AS WITH RECURSIVE r(x) AS (SELECT 1 UNION "
                               "ALL SELECT x + 1 FROM r) SELECT x AS start FROM r;")
    if kind == "trigger":
        return real_with(path, "CREATE TABLE seen(x); CREATE TRIGGER t BEFORE DELETE ON "
                               "CUPTI_ACTIVITY_KIND_KERNEL BEGIN SELECT 1; END;")
    if kind == "long":  # past the value limit of the test (nsys_schema.VALUE_LIMIT)
        return real_with(path, "UPDATE StringIds SET value = hex(zeroblob(300000)) WHERE id IN "
                               "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 3);")
    if kind == "sparse":
        return real_with(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = rowid * "
                               f"{rng.randrange(10**12, 10**15)};")
    if kind == "text":
        return real_with(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE "
                               "rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);")
    f = real_with(path, "")
    data = bytearray(f.read_bytes())
    if kind == "cut":
        data = data[:rng.randrange(100, len(data))]
    else:
        for _ in range(rng.randrange(1, 40)):
            data[rng.randrange(100, len(data))] = rng.randrange(256)
    f.write_bytes(bytes(data))
    return f


def test_fuzz_malformed_nsys_uploads_end_done_or_failed_never_stuck(
        settings, tmp_path, monkeypatch):
    from collectors.traces import nsys_schema

    monkeypatch.setattr(nsys_schema, "VALUE_LIMIT", 256 << 10)
    rng = random.Random(36)
    app, client = _app(settings, analysis_timeout_s=20.0)
    with client as c:
        uploaded: list[tuple[int, str]] = []
        for i in range(14):
            f = _fuzz_case(rng, tmp_path / f"fuzz{i}.sqlite")
            rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
            r = c.post(f"/api/v1/runs/{rid}/traces?filename=fuzz{i}.sqlite",
                       content=f.read_bytes())
            assert r.status_code in (202, 422), r.text  # not a trace at all: refused at once
            if r.status_code == 422:
                assert r.json()["error"]["code"] == "bad_trace"
            else:
                uploaded.append((rid, f.name))
        t0 = time.monotonic()
        drain_jobs(app, timeout_s=120)
        assert time.monotonic() - t0 < 120
        states = []
        for rid, name in uploaded:
            t = _trace(c, rid)
            states.append(t["state"])
            assert t["state"] in ("done", "failed"), t
            if t["state"] == "failed":
                assert t["error"] and "\n" not in t["error"] and name in t["error"], t
        assert "failed" in states, states
    app.state.engine.dispose()


def test_memory_cap_is_room_beyond_what_the_parent_mapped():
    """A parent that has mapped more than the analysis' memory cap (a server with torch loaded)
    still gives the analysis its room; past the room, the analysis runs out of memory."""
    import mmap

    from service.sandbox import Sandbox, sandboxed

    sb = Sandbox(memory_mb=256)
    held = mmap.mmap(-1, 512 << 20)  # mapped, never touched: address space, not memory
    try:
        assert sandboxed(lambda: len(bytearray(64 << 20)), 0, sb) == 64 << 20
        with pytest.raises(Exception, match="out of memory"):
            sandboxed(lambda: len(bytearray(1 << 30)), 0, sb)
    finally:
        held.close()


def _spin_for(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _cpu_work(cpu_s: float) -> float:
    start = time.process_time()
    while time.process_time() - start < cpu_s:
        pass
    return cpu_s


def test_waiting_for_a_core_is_not_late_and_a_hang_still_is():
    """At SCHED_IDLE beside a busy process on every core, an analysis that needs a
    hundredth of a second of CPU waits far longer than its 1 s deadline for a core: it is not
    refused for it. One that sleeps (a hang, not a wait) is refused at its deadline."""
    import multiprocessing as mp

    from service.sandbox import Sandbox, sandboxed

    box = Sandbox(timeout_s=1.0)
    spinners = [mp.get_context("fork").Process(target=_spin_for, args=(60,), daemon=True)
                for _ in range(os.cpu_count() or 2)]
    for p in spinners:
        p.start()
    try:
        time.sleep(0.3)
        t0 = time.monotonic()
        assert sandboxed(lambda: _cpu_work(0.01), 0, box) == 0.01
        waited = time.monotonic() - t0
    finally:
        for p in spinners:
            p.kill()
            p.join()
    assert waited > 1.0, f"the analysis never waited for a core ({waited:.2f} s): no test"
    t0 = time.monotonic()  # the cores free again: a sleep is no wait for one
    with pytest.raises(Exception, match="ran past its deadline of 1 s"):
        sandboxed(lambda: time.sleep(30), 0, box)
    assert time.monotonic() - t0 < 10


def test_an_analysis_blocked_by_a_lock_inherited_at_fork_is_tried_once_more(tmp_path):
    """The first fork blocks on a lock another thread held at that moment and never runs past
    it (asleep, no CPU used, for 3 s, before its deadline); the second fork, made with the lock
    free, parses. An analysis that blocks every time (a sleep) is refused after the second try,
    at its deadline."""
    import threading

    from service.sandbox import Sandbox, sandboxed

    box = Sandbox(timeout_s=5.0)
    lock = threading.Lock()
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:  # another thread of the server, inside a lock at the first fork
        with lock:
            held.set()
            release.wait(20)

    t = threading.Thread(target=holder, daemon=True)
    t.start()
    held.wait(5)
    forks: list[float] = []

    def work() -> str:
        with lock:  # the child's copy: held for ever in the first fork, free in the second
            return "parsed"

    def first_fork_then_free() -> None:
        time.sleep(1.0)  # the first fork is made with the lock held
        release.set()

    threading.Thread(target=first_fork_then_free, daemon=True).start()
    t0 = time.monotonic()
    assert sandboxed(work, 0, box) == "parsed"
    forks.append(time.monotonic() - t0)
    # the first try was seen asleep with no CPU used (3 s) well before its 5 s deadline; the
    # second parsed
    assert 3.0 <= forks[0] < 5.0, forks
    t.join(5)
    t0 = time.monotonic()  # asleep on the first try, then past the deadline on the second
    with pytest.raises(Exception, match="ran past its deadline of 5 s"):
        sandboxed(lambda: time.sleep(60), 0, box)
    assert 8.0 <= time.monotonic() - t0 < 15


def test_an_analysis_waiting_on_the_pieces_of_its_pieces_is_not_taken_for_blocked():
    """The analysis and the piece it forked both sleep while that piece's own piece parses (a
    rank-set worker splitting its file): the whole tree is looked at, so the parse is not taken
    for a blocked fork and started again."""
    import subprocess

    from service.sandbox import STUCK_ASLEEP_S, Sandbox, sandboxed

    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 5: pass"
    cmd = ["sh", "-c", f"{sys.executable} -c '{spin}'; true"]  # sh waits on its own child
    t0 = time.monotonic()
    done = sandboxed(lambda: subprocess.run(cmd).returncode, 0, Sandbox(timeout_s=30.0))
    took = time.monotonic() - t0
    assert done == 0
    assert STUCK_ASLEEP_S < 5 and took < 5 + STUCK_ASLEEP_S, f"tried twice: {took:.1f} s"
