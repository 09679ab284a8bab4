"""docker-compose.yml and the Dockerfile (no Docker engine runs here: check what can be checked)."""
from __future__ import annotations

import subprocess
import sys

import yaml

from tests.conftest import ROOT


def test_compose_file_is_coherent():
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    s = doc["services"]
    assert set(s) == {"db", "migrate", "api", "worker"}
    assert s["db"]["healthcheck"]["test"][1].startswith("pg_isready")
    assert s["migrate"]["command"] == ["perfwarden", "db", "upgrade", "head"]
    assert s["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert s["api"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert s["worker"]["command"] == ["perfwarden", "worker"]
    assert s["worker"]["depends_on"] == s["api"]["depends_on"]  # runs on the migrated schema
    # the worker reads the traces the API stored: the same volume at the same data directory
    assert s["worker"]["volumes"] == s["api"]["volumes"]
    assert s["worker"]["environment"]["PERFWARDEN_DATA_DIR"] == s["api"]["environment"]["PERFWARDEN_DATA_DIR"]
    for svc in ("migrate", "api", "worker"):
        url = s[svc]["environment"]["PERFWARDEN_DATABASE_URL"]
        assert url.startswith("postgresql+psycopg://") and "@db:5432/" in url
    # the commands the services run exist in the CLI
    for cmd in (s["migrate"]["command"], s["api"]["command"], s["worker"]["command"]):
        r = subprocess.run([sys.executable, "-m", "service.cli", *cmd[1:2], "--help"],
                           capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, cmd


def test_dockerfile_copies_what_exists():
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    assert lines[1].startswith("FROM python:3.11")
    for line in lines:
        if line.startswith("COPY"):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), src


def test_the_server_parses_http_in_c_on_uvloop():
    """`perfwarden serve` leaves uvicorn's choice on auto: with the declared httptools and
    uvloop installed it takes them (the pure-Python h11 parser cost a third of ingest's rate)."""
    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    config = uvicorn.Config("service.main:create_app", factory=True)
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    if sys.platform != "win32":
        import uvloop

        assert config.get_loop_factory() is uvloop.new_event_loop
