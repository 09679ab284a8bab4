"""Runs and their traces commit together: a failed or interrupted trace upload stores no run
and deletes none, a retry ends with the same ids, and a record file cannot name trace files
outside its folder unless told to. SQLite and PostgreSQL (the live server's database)."""
from __future__ import annotations

import json
import shutil

import httpx
import pytest

from collectors import record as record_mod
from collectors.cli import main as cli_main
from tests.conftest import DATA, minimal_run

TRACES = [DATA / "kineto_1layer_M4.json.gz", DATA / "kineto_1layer_M8.json.gz"]


def _records_file(folder, bench: str):
    """Two runs of `bench` in a record file, one trace each, beside it in traces/."""
    (folder / "traces").mkdir(parents=True)
    recs = []
    for i, src in enumerate(TRACES):
        shutil.copyfile(src, folder / "traces" / src.name)
        recs.append(minimal_run(benchmark=bench, config={"tp": 1, "batch_size": 4 * (i + 1)},
                                started_at=f"2026-11-0{i + 1}T00:00:00Z",
                                trace_files=[f"traces/{src.name}"]))
    path = folder / "runs.json"
    path.write_text(json.dumps(recs))
    return path


def _ingest(capsys, *argv) -> tuple[int, list[int], str]:
    capsys.readouterr()
    rc = cli_main(["ingest", *map(str, argv), "--no-detect"])
    out = capsys.readouterr()
    return rc, [int(x) for x in out.out.split()], out.err


def _break_trace_request(monkeypatch, nth: int, error: BaseException) -> list[str]:
    """The `nth` request that carries a trace file fails with `error` (a refusal, or the
    command being interrupted there); the others reach the server. Returns the URLs sent."""
    real, sent = record_mod._send, []

    def send(server, req, refused, token, timeout, missing_ok=False):
        sent.append(f"{req.get_method()} {req.full_url}")
        if "/traces" in req.full_url and req.get_method() == "POST":
            if sum("/traces" in u and u.startswith("POST") for u in sent) == nth:
                raise error
        return real(server, req, refused, token, timeout, missing_ok)
    monkeypatch.setattr(record_mod, "_send", send)
    return sent


def _traces_of(url: str, rid: int) -> list[str]:
    return sorted(t["sha256"] for t in httpx.get(f"{url}/api/v1/runs/{rid}").json()["traces"])


def test_a_retry_after_a_failed_trace_upload_deletes_nothing(live_server, tmp_path, capsys,
                                                             monkeypatch):
    url, _ = live_server
    path = _records_file(tmp_path / "w", "retried")
    rc, ids, err = _ingest(capsys, path, "--server", url)
    assert rc == 0 and len(ids) == 2, err
    held = {rid: _traces_of(url, rid) for rid in ids}
    assert all(len(v) == 1 for v in held.values())
    r = httpx.post(f"{url}/api/v1/baselines", json={"name": "v1", "benchmark": "retried",
                                                    "run_ids": ids})
    assert r.status_code == 201, r.text

    # the same ingest again, and the server refuses the second trace this time
    with monkeypatch.context() as m:
        _break_trace_request(m, 2, RuntimeError("server refused the trace (503): unavailable"))
        rc, out_ids, err = _ingest(capsys, path, "--server", url)
    assert rc == 2 and out_ids == [], err
    assert err.strip().splitlines()[-1].startswith("error: trace file") and "nothing" in err
    for rid in ids:  # the runs stored before are all there, with their traces
        assert httpx.get(f"{url}/api/v1/runs/{rid}").status_code == 200
        assert _traces_of(url, rid) == held[rid]
    assert httpx.get(f"{url}/api/v1/baselines/retried/v1").json()["run_ids"] == ids

    rc, again, err = _ingest(capsys, path, "--server", url)
    assert rc == 0 and again == ids, err
    assert {rid: _traces_of(url, rid) for rid in ids} == held
    assert httpx.get(f"{url}/api/v1/runs?benchmark=retried").json()["count"] == 2


def test_an_interrupted_ingest_shows_nothing_and_its_retry_finishes(live_server, tmp_path,
                                                                    capsys, monkeypatch):
    url, _ = live_server
    path = _records_file(tmp_path / "w", "interrupted")
    with monkeypatch.context() as m:
        _break_trace_request(m, 2, KeyboardInterrupt())
        rc, ids, err = _ingest(capsys, path, "--server", url)
    assert rc == 130 and ids == [], err
    # no run is seen without its traces
    assert httpx.get(f"{url}/api/v1/runs?benchmark=interrupted").json()["count"] == 0

    rc, ids, err = _ingest(capsys, path, "--server", url)
    assert rc == 0 and len(ids) == 2, err
    for rid in ids:
        run = httpx.get(f"{url}/api/v1/runs/{rid}").json()
        assert len(run["traces"]) == 1 and run["traces"][0]["state"] in ("pending", "done")
    rc, again, err = _ingest(capsys, path, "--server", url)
    assert rc == 0 and again == ids, err
    assert all(len(_traces_of(url, rid)) == 1 for rid in ids)


def test_trace_files_outside_the_record_folder_are_refused(live_server, tmp_path, capsys):
    url, _ = live_server
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copyfile(TRACES[0], elsewhere / "private.json.gz")
    folder = tmp_path / "w"
    folder.mkdir()
    for name in (str(elsewhere / "private.json.gz"), "../elsewhere/private.json.gz"):
        path = folder / "runs.json"
        path.write_text(json.dumps([minimal_run(benchmark="outside", trace_files=[name])]))
        rc, ids, err = _ingest(capsys, path, "--server", url)
        lines = err.strip().splitlines()
        # bad input: exit 65, as sysexits numbers it
        assert rc == 65 and ids == [] and len(lines) == 1, err
        assert "outside the record's folder" in lines[0] and "--allow-outside-traces" in lines[0]
        assert httpx.get(f"{url}/api/v1/runs?benchmark=outside").json()["count"] == 0
    rc, ids, err = _ingest(capsys, path, "--server", url, "--allow-outside-traces")
    assert rc == 0 and len(ids) == 1, err
    assert len(_traces_of(url, ids[0])) == 1


def test_a_batch_naming_a_trace_not_staged_stores_nothing(client, settings):
    from tests.conftest import count_rows

    raw = TRACES[0].read_bytes()
    r = client.post("/api/v1/traces/stage?filename=rank0.json.gz", content=raw)
    assert r.status_code == 201 and r.json()["format"] == "kineto", r.text
    sha = r.json()["sha256"]
    assert client.post("/api/v1/traces/stage?filename=rank0.json.gz",
                       content=raw).status_code == 200
    r = client.post("/api/v1/traces/stage?filename=rank0.json", content=b"PK\x03\x04 zip")
    assert r.status_code == 422
    body = {"runs": [minimal_run(), minimal_run(config={"tp": 2, "batch_size": 1})],
            "traces": [[{"filename": "rank0.json.gz", "sha256": sha}],
                       [{"filename": "rank1.json.gz", "sha256": "0" * 64}]]}
    r = client.post("/api/v1/runs/batch", json=body)
    assert r.status_code == 422 and r.json()["error"]["code"] == "trace_not_staged", r.text
    assert count_rows(settings.database_url, "runs") == 0
    assert count_rows(settings.database_url, "traces") == 0
    r = client.post("/api/v1/runs/batch", json={**body, "traces": body["traces"][:1]})
    assert r.status_code == 422 and "one list per run" in r.json()["error"]["message"]
    body["traces"][1] = []
    r = client.post("/api/v1/runs/batch", json=body)
    assert r.status_code == 201, r.text
    first, second = r.json()["ids"]
    got = client.get(f"/api/v1/runs/{first}").json()["traces"]
    assert [t["sha256"] for t in got] == [sha] and got[0]["state"] == "pending"
    assert client.get(f"/api/v1/runs/{second}").json()["traces"] == []
    assert not (settings.data_dir / "staged" / sha).exists()  # stored with its run now
    assert client.get(f"/api/v1/traces/{got[0]['id']}").content == raw


def test_a_committed_batch_retried_with_its_staged_traces_answers_its_ids(client, settings):
    """The commit used up the staging; the same batch again (its answer was lost) gets the
    same run ids back, and no trace row is added."""
    from tests.conftest import count_rows

    raw = TRACES[0].read_bytes()
    sha = client.post("/api/v1/traces/stage?filename=rank0.json.gz", content=raw).json()["sha256"]
    body = {"runs": [minimal_run(idempotency_key="ci-1"),
                     minimal_run(config={"tp": 2, "batch_size": 1}, idempotency_key="ci-2")],
            "traces": [[{"filename": "rank0.json.gz", "sha256": sha}], []]}
    r = client.post("/api/v1/runs/batch", json=body)
    assert r.status_code == 201, r.text
    ids = r.json()["ids"]
    assert not (settings.data_dir / "staged" / sha).exists()
    again = client.post("/api/v1/runs/batch", json=body)
    assert again.status_code in (200, 201) and again.json()["ids"] == ids, again.text
    assert count_rows(settings.database_url, "runs") == 2
    assert count_rows(settings.database_url, "traces") == 1
    # a batch of new runs naming the stored (not staged) content is still refused
    other = {"runs": [minimal_run(idempotency_key="ci-3", started_at="2026-03-01T00:00:00Z")],
             "traces": [[{"filename": "rank0.json.gz", "sha256": sha}]]}
    r = client.post("/api/v1/runs/batch", json=other)
    assert r.status_code == 422 and r.json()["error"]["code"] == "trace_not_staged", r.text


@pytest.fixture(autouse=True)
def _no_token(monkeypatch):
    monkeypatch.delenv("PERFWARDEN_TOKEN", raising=False)
