"""Staged trace files under quotas, on SQLite and PostgreSQL: what one token may hold and what
all of them may hold, each refused with one line and nothing kept; a full disk answers 507 with
one line, and nothing of the request is left on disk or in the database."""
from __future__ import annotations

import errno
import os
import shutil

from fastapi.testclient import TestClient

from tests.conftest import DATA, LOCAL, count_rows, minimal_run

TRACES = [DATA / "kineto_1layer_M8.json.gz", DATA / "kineto_1layer_M4.json.gz",
          DATA / "kineto_1layer_M4_epoch_us.json.gz"]


def _client(settings, **over):
    from service.main import create_app

    app = create_app(settings.model_copy(update={"jobs_in_process": False, **over}))
    return TestClient(app, raise_server_exceptions=False, **LOCAL)


def _token(settings, name: str) -> dict:
    from tests.service.test_guard import _token as make

    return {"Authorization": f"Bearer {make(settings, name, 'ingest', ['bench-a'])}"}


def _staged(settings) -> list[str]:
    d = settings.data_dir / "staged"
    return sorted(f.name for f in d.iterdir() if f.is_file()) if d.is_dir() else []


def _stage(c, path, headers=None):
    return c.post(f"/api/v1/traces/stage?filename={path.name}", content=path.read_bytes(),
                  headers=headers or {})


def test_staged_bytes_are_capped_per_token_and_in_all(settings):
    sizes = [p.stat().st_size for p in TRACES]
    per_token = sizes[0] + sizes[1] + 10  # two files, not three
    everyone = per_token + sizes[2] + 10
    c = _client(settings, max_staged_bytes=everyone, max_staged_bytes_per_token=per_token)
    a, b = _token(settings, "ci-a"), _token(settings, "ci-b")
    c.app.state.no_tokens_until = 0.0
    assert _stage(c, TRACES[0], a).status_code == 201
    assert _stage(c, TRACES[1], a).status_code == 201
    assert _stage(c, TRACES[1], a).status_code == 200  # the same file again costs nothing
    r = _stage(c, TRACES[2], a)
    assert r.status_code == 413, r.text
    msg = r.json()["error"]["message"]
    assert "'ci-a'" in msg and "PERFWARDEN_MAX_STAGED_BYTES_PER_TOKEN" in msg and "\n" not in msg
    assert len(_staged(settings)) == 2 and not list((settings.data_dir / "tmp").iterdir())
    assert _stage(c, TRACES[2], b).status_code == 201  # another token has its own share
    r = _stage(c, TRACES[0], b)  # staged already: no more bytes on disk, but b's share
    assert r.status_code == 200
    # all of them are full now: a new file of a third writer is refused
    extra = settings.data_dir.parent / "other.json.gz"
    shutil.copy(TRACES[0], extra)
    with open(extra, "ab") as f:
        f.write(b"\0" * 16)  # other content (gzip ignores trailing zeros)
    r = _stage(c, extra, _token(settings, "ci-c"))
    assert r.status_code == 413 and "PERFWARDEN_MAX_STAGED_BYTES)" in r.json()["error"]["message"]
    assert len(_staged(settings)) == 3
    # a batch names a's files: their bytes are a's no more
    body = {"runs": [minimal_run()], "traces": [[{"filename": "r0.json.gz",
                                                  "sha256": _sha(TRACES[0])}]]}
    assert c.post("/api/v1/runs/batch", json=body, headers=a).status_code == 201
    assert _stage(c, TRACES[2], a).status_code == 200  # staged by b already: a's share now


def _sha(path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_full_disk_answers_507_and_keeps_nothing(settings, monkeypatch):
    from service.traces import intake, storage, uploads

    c = _client(settings)

    def full(*a, **k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(intake, "SPILL_BYTES", 1 << 14)
    real_replace = os.replace
    monkeypatch.setattr(uploads.os, "replace", full)  # the staged file cannot be written
    r = _stage(c, TRACES[0])
    assert r.status_code == 507, r.text
    err = r.json()["error"]
    assert err["code"] == "insufficient_storage" and "\n" not in err["message"]
    assert _staged(settings) == [] and not list((settings.data_dir / "tmp").iterdir())
    monkeypatch.setattr(uploads.os, "replace", real_replace)
    sha = _stage(c, TRACES[0]).json()["sha256"]
    monkeypatch.setattr(uploads.shutil, "copyfile", full)
    monkeypatch.setattr(uploads.os, "link", full)
    body = {"runs": [minimal_run()], "traces": [[{"filename": "r0.json.gz", "sha256": sha}]]}
    r = c.post("/api/v1/runs/batch", json=body)
    assert r.status_code == 507, r.text
    assert count_rows(settings.database_url, "runs") == 0
    assert not storage.path_for(settings.data_dir, sha).exists()
    assert not [f for f in storage.trace_dir(settings.data_dir).rglob("*") if f.is_file()]
    assert _staged(settings) == [sha]  # kept for the retry
