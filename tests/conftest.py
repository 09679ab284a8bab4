"""Shared fixtures: databases (SQLite file and real PostgreSQL), the app, real data paths."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
H200 = ROOT / "data" / "h200"
PG_ADMIN = os.environ.get("PERFWARDEN_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
ARTIFACTS = ROOT / "test-artifacts"
# the browser tests' screenshots, for a person to look at (no test reads them), are saved there
# only where PERFWARDEN_SCREENSHOTS=1: the captures cost every page test time (docs/results.md,
# "Test suite time")
SCREENSHOTS = os.environ.get("PERFWARDEN_SCREENSHOTS", "") not in ("", "0")


def screenshot(page, path: Path, full_page: bool = False) -> None:
    """Save what `page` shows to `path` where PERFWARDEN_SCREENSHOTS asks for it."""
    if SCREENSHOTS:
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=full_page)
# TestClient's default peer ('testclient') and Host ('testserver') are not this machine: a
# client built with these is a request from loopback, as a local CLI or browser makes
LOCAL = {"base_url": "http://localhost", "client": ("127.0.0.1", 50000)}


def _pg_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN.replace("+psycopg", ""), connect_timeout=3):
            return True
    except Exception:  # noqa: BLE001
        return False


@pytest.fixture(scope="session")
def pg_ok() -> bool:
    ok = _pg_available()
    if not ok and os.environ.get("CI"):
        pytest.fail("PostgreSQL is not answering on 127.0.0.1:5432 (CI must start it)")
    return ok


def new_pg_database(create: bool = True) -> tuple[str, callable]:
    """A database name of its own and its drop; created empty unless `create` is off (the
    caller makes it, e.g. as a copy of the migrated template)."""
    import psycopg

    name = f"pw_test_{uuid.uuid4().hex[:10]}"
    admin = PG_ADMIN.replace("+psycopg", "")
    if create:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')

    def drop():
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return PG_ADMIN.rsplit("/", 1)[0] + f"/{name}", drop


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path, pg_ok):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'perfwarden.db'}"
        return
    if not pg_ok:
        pytest.skip("PostgreSQL not available")
    # a test with `settings` gets its database as a copy of the migrated template: making an
    # empty one first would cost a quarter of a second for nothing
    url, drop = new_pg_database(create="settings" not in request.fixturenames)
    try:
        yield url
    finally:
        drop()


@pytest.fixture(scope="session")
def migrated(pg_ok, tmp_path_factory):
    """Databases at the head revision, migrated once per session: a SQLite file and, where
    PostgreSQL answers, a template database. A test's database starts as a copy of one (a
    quarter of a second instead of running every migration again)."""
    import shutil

    from service.migrate import upgrade

    lite = tmp_path_factory.mktemp("migrated") / "head.db"
    upgrade(f"sqlite:///{lite}")
    pg_url, drop = new_pg_database() if pg_ok else (None, None)
    if pg_url:
        upgrade(pg_url)

    def clone(url: str) -> None:
        if url.startswith("sqlite"):
            shutil.copyfile(lite, url.removeprefix("sqlite:///"))
            return
        import psycopg

        assert pg_url is not None
        name, tmpl = url.rsplit("/", 1)[1], pg_url.rsplit("/", 1)[1]
        with psycopg.connect(PG_ADMIN.replace("+psycopg", ""), autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}"')
            con.execute(f'CREATE DATABASE "{name}" TEMPLATE "{tmpl}"')
            # a test database outlives no crash of the server: its commits need not wait for
            # the disk (what a commit makes visible is the same)
            con.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')

    yield clone
    if drop:
        drop()


@pytest.fixture
def settings(db_url, tmp_path, migrated):
    from service.config import Settings

    migrated(db_url)
    # the summaries' refresh at once: a test that drains its jobs would otherwise wait out the
    # pace after every refresh a busy machine made slow (tests/service/test_jobs.py tests it)
    return Settings(database_url=db_url, data_dir=tmp_path / "data", bind_host="127.0.0.1",
                    summary_pace=0.0)


@pytest.fixture
def client(settings):
    from fastapi.testclient import TestClient

    from service.main import create_app

    app = create_app(settings)
    with TestClient(app, **LOCAL) as c:
        yield c
    app.state.engine.dispose()


def count_rows(url: str, table: str) -> int:
    from sqlalchemy import create_engine, text

    eng = create_engine(url)
    with eng.connect() as c:
        n = c.execute(text(f"SELECT count(*) FROM {table}")).scalar()
    eng.dispose()
    return n


def h200_records(*parts: str) -> list[dict]:
    out = []
    for f in sorted(H200.joinpath(*parts).glob("*.json")):
        for r in json.loads(f.read_text()):
            r.pop("trace_files", None)
            out.append(r)
    return out


def minimal_run(**over) -> dict:
    run = {"benchmark": "bench-a", "config": {"tp": 1, "batch_size": 1},
           "hardware": {"gpu": "NVIDIA H200", "gpu_count": 1},
           "metrics": {"tok_s": {"unit": "tok/s", "direction": "higher",
                                 "samples": [100.0, 101.0, 99.5]}}}
    run.update(over)
    return run


def serve_live(settings, jobs_in_process: bool = True):
    """The real app under uvicorn on a free loopback port; yields (url, app). With
    `jobs_in_process` off, queued jobs wait until a test drains them."""
    import socket
    import threading
    import time

    import uvicorn

    from service.main import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(settings.model_copy(update={"jobs_in_process": jobs_in_process}))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", app
    server.should_exit = True
    t.join(10)
    app.state.engine.dispose()


@pytest.fixture
def live_server(settings):
    """The real app under uvicorn on a free loopback port (for the CLI and the browser), with
    its jobs in process as `serve` runs them."""
    yield from serve_live(settings, jobs_in_process=True)


def drain_jobs(app, timeout_s: float = 120) -> None:
    """Run the app's queued durable jobs (trace analysis, alert evaluation, deliveries) until
    none waits or runs: what a `perfwarden worker` would do, here and now."""
    from service.jobs.worker import drain

    drain(app.state.settings, app.state.sessions, timeout_s)


def write_at_once(database_url: str, update_sql: str) -> str:
    """Another writer's try to run `update_sql` (an UPDATE; rolled back on SQLite) within half a
    second: "ok", or why it could not (SQLite: the one write lock held; PostgreSQL: a row lock)."""
    import sqlite3

    from sqlalchemy import create_engine, text

    if database_url.startswith("sqlite"):
        con = sqlite3.connect(database_url.split("///", 1)[1], timeout=0.5)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute(update_sql)
            con.rollback()
            return "ok"
        except sqlite3.OperationalError as e:
            return str(e)
        finally:
            con.close()
    eng = create_engine(database_url)
    try:
        with eng.begin() as c:
            c.execute(text("SET LOCAL lock_timeout = '500ms'"))
            c.execute(text(update_sql))
        return "ok"
    except Exception as e:  # noqa: BLE001 (the lock timeout's error, kept to see)
        return type(e).__name__
    finally:
        eng.dispose()


# Where a test reads the database only through use cases another test runs on both databases,
# its PostgreSQL copy finds nothing more: the pages (tests/dashboards/) and tests marked
# `one_database` run on SQLite only; a module of them that reaches SQL of its own sets
# BOTH_DATABASES = True.
ONE_DATABASE_FOLDERS = ("tests/dashboards/",)


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        on_pg = spec is not None and spec.params.get("db_url") == "postgresql"
        path = Path(str(item.fspath)).relative_to(ROOT).as_posix()
        one = item.get_closest_marker("one_database") is not None or (
            path.startswith(ONE_DATABASE_FOLDERS)
            and not getattr(item.module, "BOTH_DATABASES", False))
        (drop if on_pg and one else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_sessionstart(session):
    """The service's modules imported once, then frozen out of the garbage collector's walk, as
    a server process does once started (service/serving.py, settle): statsmodels' Holm
    correction runs a full collection on every call, and a test process holds more objects
    than a server. pytest-xdist's controller runs no test: it starts its workers at once."""
    if session.config.getoption("numprocesses", None) and not hasattr(session.config, "workerinput"):
        return
    import dashboards.routes  # noqa: F401 - the site the app mounts (service/site.py)
    import service.main  # noqa: F401 - every module the app imports
    import service.stats.attribution  # noqa: F401 - statsmodels
    from service.serving import settle

    settle()
