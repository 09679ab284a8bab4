"""Trace upload, download and timeline; migrations up and down on both databases."""
from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import create_engine, inspect, text

from service import migrate
from tests.conftest import DATA, H200, LOCAL, drain_jobs, minimal_run, write_at_once


def test_migrations_up_and_down(db_url):
    migrate.upgrade(db_url)
    assert migrate.current(db_url) == migrate.head()
    eng = create_engine(db_url)
    tables = set(inspect(eng).get_table_names())
    assert {"runs", "samples", "series", "baselines", "metric_registry", "api_tokens",
            "traces"} <= tables
    with eng.connect() as c:
        n = c.execute(text("SELECT count(*) FROM metric_registry WHERE builtin")).scalar()
    assert n == 27  # 15 named metrics (cpu_tok_s and the request counts among them) + the
    # ttft/tpot/itl/e2el families
    eng.dispose()
    migrate.downgrade(db_url, "base")
    assert migrate.current(db_url) is None
    eng = create_engine(db_url)
    assert "runs" not in set(inspect(eng).get_table_names())
    eng.dispose()
    migrate.upgrade(db_url)


def test_upload_analyze_download_timeline(client, settings):
    rid = client.post("/api/v1/runs", json=minimal_run()).json()["id"]
    raw = (H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz").read_bytes()
    r = client.post(f"/api/v1/runs/{rid}/traces?filename=graphs.sqlite.gz", content=raw)
    assert r.status_code == 202, r.text  # stored; the analysis is a job
    body = r.json()
    assert body["sha256"] == hashlib.sha256(raw).hexdigest() and body["format"] == "nsys"
    assert body["state"] == "pending" and body["summary"] is None
    drain_jobs(client.app)
    run = client.get(f"/api/v1/runs/{rid}").json()
    assert run["traces"][0]["id"] == body["id"] and run["traces"][0]["state"] == "done"
    assert run["trace_summary"]["steps"] == 10 and run["trace_summary"]["aux_gap_count"] == 30
    again = client.post(f"/api/v1/runs/{rid}/traces?filename=graphs.sqlite.gz", content=raw)
    assert again.status_code == 200 and again.json()["state"] == "done"
    assert again.json()["summary"]["aux_gap_mean_us"] == pytest.approx(run["trace_summary"]["aux_gap_mean_us"])
    d = client.get(f"/api/v1/traces/{body['id']}")
    assert d.status_code == 200 and d.content == raw
    tl = client.get(f"/api/v1/traces/{body['id']}/timeline?steps=2").json()
    assert len(tl["steps"]) == 2 and tl["total_steps"] == 10
    assert {s["role"] for s in tl["streams"]} == {"main", "aux"}
    assert all(o["end_us"] >= o["start_us"] for o in tl["ops"])
    stored = settings.data_dir / "traces" / body["sha256"][:2] / body["sha256"]
    assert stored.exists()


def test_kineto_upload(client):
    rid = client.post("/api/v1/runs", json=minimal_run()).json()["id"]
    r = client.post(f"/api/v1/runs/{rid}/traces?filename=m4.json.gz",
                    content=(DATA / "kineto_1layer_M4.json.gz").read_bytes())
    assert r.status_code == 202 and r.json()["format"] == "kineto"
    drain_jobs(client.app)
    assert client.get(f"/api/v1/runs/{rid}").json()["trace_summary"]["aux_gap_mean_us"] == \
        pytest.approx(57.768)


@pytest.mark.parametrize("name,content,status", [
    ("t.json", b"", 422), ("t.json.gz", b"\x1f\x8b\x08\x00garbage", 422),
    ("t.txt.gz", b"plain text, no trace", 422), ("t.sqlite", b"SQLite format 3\x00" + b"\x01" * 64, 422),
    ("t.exe", b"{}", 422), ("../../etc/passwd.json", b"{}", 422)])
def test_bad_traces_refused_nothing_stored(client, settings, name, content, status):
    """What is not a trace at all is refused in the request (the analysis job never sees it)."""
    rid = client.post("/api/v1/runs", json=minimal_run()).json()["id"]
    r = client.post(f"/api/v1/runs/{rid}/traces", params={"filename": name}, content=content)
    assert r.status_code == status and "Traceback" not in r.text
    assert client.get(f"/api/v1/runs/{rid}").json()["traces"] == []
    tdir = settings.data_dir / "traces"
    assert not tdir.exists() or not any(p.is_file() for p in tdir.rglob("*"))
    assert not any((settings.data_dir / "tmp").glob("*")) if (settings.data_dir / "tmp").exists() else True


def test_trace_that_fails_analysis_is_failed_with_the_reason(client):
    """A file that looks like a trace but does not parse: 202, then `failed` naming the file;
    the run keeps no summary, and a good trace after it is analyzed as usual."""
    rid = client.post("/api/v1/runs", json=minimal_run()).json()["id"]
    r = client.post(f"/api/v1/runs/{rid}/traces", params={"filename": "cut.json"},
                    content=b'{"traceEvents": [')
    assert r.status_code == 202 and r.json()["state"] == "pending"
    drain_jobs(client.app)
    run = client.get(f"/api/v1/runs/{rid}").json()
    t = run["traces"][0]
    assert t["state"] == "failed" and "cut.json" in t["error"] and run["trace_summary"] is None
    page = client.get(f"/runs/{rid}").text
    assert 'data-state="failed"' in page and "cut.json" in page


@pytest.mark.parametrize("bad_first", [False, True])
def test_a_set_with_a_failed_rank_keeps_no_columns(client, settings, bad_first):
    """A rank that fails ends its set (it can never complete): the columns the good rank kept
    for the set's analysis are removed, whichever rank's job ends first."""
    from service.traces import storage

    rid = client.post("/api/v1/runs", json=minimal_run(config={"tp": 2})).json()["id"]
    good = sorted((H200 / "resident" / "torch" / "traces").glob("*.json.gz"))[0]
    ranks = [(good.name, good.read_bytes()), ("rank1.json", b'{"traceEvents": [')]
    for name, body in ranks[::-1] if bad_first else ranks:
        r = client.post(f"/api/v1/runs/{rid}/traces", params={"filename": name, "set_size": 2},
                        content=body)
        assert r.status_code == 202
    drain_jobs(client.app)
    run = client.get(f"/api/v1/runs/{rid}").json()
    assert sorted(t["state"] for t in run["traces"]) == ["done", "failed"]
    assert run["trace_summary"] is None
    assert not list(storage.columns_dir(settings.data_dir).glob("*.npz"))


def test_the_sweep_keeps_only_what_a_set_being_assembled_needs(client, settings):
    """After each analysis job: a set still waiting for a rank keeps its ranks' columns; columns
    no trace row holds (a run deleted, a job that died after recording) go, and so do the temp
    files of a save killed more than an hour ago."""
    import os
    import time

    from service.traces import storage
    from service.traces.attach import sweep_columns

    rid = client.post("/api/v1/runs", json=minimal_run(config={"tp": 2})).json()["id"]
    good = sorted((H200 / "resident" / "torch" / "traces").glob("*.json.gz"))[0]
    r = client.post(f"/api/v1/runs/{rid}/traces", params={"filename": good.name, "set_size": 2},
                    content=good.read_bytes())
    drain_jobs(client.app)
    folder = storage.columns_dir(settings.data_dir)
    waiting = [f.name for f in folder.glob("*.npz")]
    assert [n.split(".")[0] for n in waiting] == [r.json()["sha256"]]  # rank 1 has not come
    (folder / f"{'0' * 64}.abc.npz").write_bytes(b"x")  # a trace no row holds
    old, young = folder / ".columns-old.npz", folder / ".columns-young.npz"
    for f in (old, young):
        f.write_bytes(b"x")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    sweep_columns(client.app.state.sessions, settings.data_dir)
    assert sorted(f.name for f in folder.iterdir()) == sorted([young.name, *waiting])


def test_trace_size_limit(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    settings.max_trace_bytes = 1000
    with TestClient(create_app(settings), **LOCAL) as c:
        rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
        r = c.post(f"/api/v1/runs/{rid}/traces?filename=x.json", content=b"{" + b" " * 5000 + b"}")
        assert r.status_code == 413
        assert not any((settings.data_dir / "tmp").glob("*"))


def test_trace_for_missing_run(client):
    assert client.post("/api/v1/runs/999/traces?filename=a.json", content=b"{}").status_code == 404


@pytest.mark.serial
@pytest.mark.one_database  # the pace is the upload's intake, before any row is written
@pytest.mark.parametrize("mb_s", [4.0, 0.0])
def test_uploads_into_one_process_share_its_pace(settings, mb_s):
    """PERFWARDEN_UPLOAD_MB_S: the uploads into one API process share the rate (each piece of
    a body waits for the slot the pieces before it booked), and arrive whole; 0 leaves them
    unpaced."""
    import gzip
    import time

    from fastapi.testclient import TestClient

    from service.main import create_app

    settings.upload_mb_s = mb_s
    doc = gzip.decompress((DATA / "kineto_1layer_M4.json.gz").read_bytes()).rstrip()
    bodies = [doc + b" " * ((3 << 20) - len(doc)) + b"\n" * k for k in (1, 2, 3)]  # 3 MiB each
    with TestClient(create_app(settings), **LOCAL) as c:
        rid = c.post("/api/v1/runs", json=minimal_run()).json()["id"]
        t0 = time.monotonic()
        for k, body in enumerate(bodies):
            r = c.post(f"/api/v1/runs/{rid}/traces", params={"filename": f"r{k}.json"},
                       content=body)
            assert r.status_code == 202 and r.json()["sha256"] == hashlib.sha256(body).hexdigest()
        took = time.monotonic() - t0
    least = (6 << 20) / 4e6  # the third body waits for the first two's 6 MiB at 4 MB/s
    assert (took >= least) if mb_s else (took < least), took


def test_a_trace_is_analyzed_in_a_process_of_its_own_at_the_lowest_priority(monkeypatch,
                                                                            tmp_path):
    """The analysis runs in a forked process at SCHED_IDLE (a gate request never waits behind a
    parse), single-threaded (free to fork its pieces); a process that dies is named, and a
    file that is no trace is still the 422 naming the upload."""
    import os
    import threading
    import time
    from pathlib import Path

    from service.errors import Invalid
    from service.traces import analysis

    seen = {"policy": os.sched_getscheduler(0), "pid": os.getpid()}
    monkeypatch.setattr(analysis, "analyze_files", lambda *a, **k: {
        "policy": os.sched_getscheduler(0), "pid": os.getpid(),
        "threads": threading.active_count(), "kernels": []})
    threading.Thread(target=threading.Event().wait, args=(5,), daemon=True).start()
    got = analysis.analyze_set([(DATA / "kineto_1layer_M4.json.gz", "m4.json.gz")])
    assert got["policy"] == os.SCHED_IDLE != seen["policy"] and got["pid"] != seen["pid"]
    assert got["threads"] == 1 and os.sched_getscheduler(0) == seen["policy"]
    pid_file = tmp_path / "piece.pid"

    def dies(*a, **k):  # a piece forked first holds the result pipe, then the analysis dies
        if (pid := os.fork()) == 0:
            time.sleep(120)
            os._exit(0)
        pid_file.write_text(str(pid))
        os._exit(3)

    monkeypatch.setattr(analysis, "analyze_files", dies)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="exit code 3"):
        analysis.analyze_set([(DATA / "kineto_1layer_M4.json.gz", "m4.json.gz")])
    assert time.monotonic() - t0 < 30  # not held open by the piece's end of the pipe
    stat = Path(f"/proc/{pid_file.read_text()}/stat")
    deadline = time.monotonic() + 10
    while stat.exists() and stat.read_text().split(")")[1].split()[0] != "Z" \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not stat.exists() or stat.read_text().split(")")[1].split()[0] == "Z"  # killed
    monkeypatch.undo()
    with pytest.raises(Invalid, match="cut.json"):
        path = DATA.parent / "README.md"
        analysis.analyze_set([(path, "cut.json")])


def test_a_timeline_a_page_waits_for_is_parsed_at_the_callers_priority(monkeypatch, tmp_path):
    """The run page's timeline is parsed in the sandbox at the request's CPU class, not a
    job's SCHED_IDLE (beside two busy cores an idle parse ran hundreds of times as long)."""
    import os

    from service.traces import analysis, storage

    sha = "ab" * 32
    path = storage.path_for(tmp_path, sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{}")
    monkeypatch.setattr(analysis, "_timeline", lambda *a: {
        "policy": os.sched_getscheduler(0), "pid": os.getpid()})
    got = analysis.timeline_of(tmp_path, sha, "t.json", 5)
    assert got["pid"] != os.getpid() and got["policy"] == os.sched_getscheduler(0) != os.SCHED_IDLE


def test_a_rank_set_is_analyzed_outside_any_transaction(settings, monkeypatch):
    """The set's analysis (seconds to minutes for 8 large ranks) holds no lock: while it runs,
    another writer updates the run at once (PostgreSQL: its row; SQLite: the one write lock),
    and the set's summary is still recorded with the last rank."""
    from fastapi.testclient import TestClient

    from service.main import create_app
    from service.traces import analysis, storage

    tp2 = sorted((H200 / "resident" / "torch" / "traces").glob("*.json.gz"))
    real, writes, kept = analysis.analyze_set, [], []
    columns = storage.columns_dir(settings.data_dir)

    def watched(files, keep_in=None, sandbox=None):
        if len(files) > 1:  # the set's analysis, not one file's
            assert keep_in == columns
            kept.extend(sorted(f.name.split(".")[0] for f in columns.glob("*.npz")))
            writes.append(write_at_once(settings.database_url,
                                        f"UPDATE runs SET label = label WHERE id = {rid}"))
        return real(files, keep_in, sandbox)

    monkeypatch.setattr(analysis, "analyze_set", watched)
    app = create_app(settings.model_copy(update={"jobs_in_process": False}))
    with TestClient(app, **LOCAL) as c:
        rid = c.post("/api/v1/runs", json=minimal_run(config={"tp": 2})).json()["id"]
        for f in tp2:
            r = c.post(f"/api/v1/runs/{rid}/traces",
                       params={"filename": f.name, "set_size": 2}, content=f.read_bytes())
            assert r.status_code == 202
        drain_jobs(app)
        run = c.get(f"/api/v1/runs/{rid}").json()
    app.state.engine.dispose()
    assert writes == ["ok"]  # the set was analyzed once, and nothing waited for it
    assert [t["state"] for t in run["traces"]] == ["done", "done"]
    assert len(run["trace_summary"]["ranks"]) == 2 and run["trace_summary"]["warnings"] == []
    # each rank's loaded columns were there for the set's analysis, and are gone once it is in
    assert kept == sorted(t["sha256"] for t in run["traces"])
    assert not list(columns.glob("*"))
