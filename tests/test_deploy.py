"""docker-compose.yml and the Dockerfile (no Docker engine runs here: check what can be checked)."""
from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT


def test_compose_file_is_coherent():
    doc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    s = doc["services"]
    assert set(s) == {"db", "migrate", "api", "worker", "proxy"}
    # only the proxy is published, on loopback unless PERFWARDEN_PUBLISH says otherwise
    assert "ports" not in s["api"] and s["api"]["expose"] == ["8000"]
    assert s["proxy"]["ports"] == ["${PERFWARDEN_PUBLISH:-127.0.0.1:8000}:8080"]
    assert s["proxy"]["volumes"] == ["./deploy/nginx.conf:/etc/nginx/nginx.conf:ro"]
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


def test_the_proxy_config_is_valid_nginx_with_deadlines_and_caps(tmp_path):
    """deploy/nginx.conf: what it sets, and `nginx -t` accepts it (the upstream's name `api`,
    which resolves only inside the stack, put as loopback for the check)."""
    import re
    import shutil

    from service.config import Settings

    text = (ROOT / "deploy" / "nginx.conf").read_text()
    directives = dict(re.findall(r"^\s*(client_header_timeout|client_body_timeout|send_timeout|"
                                 r"keepalive_timeout)\s+(\S+);", text, re.M))
    assert directives == {"client_header_timeout": "10s", "client_body_timeout": "30s",
                          "send_timeout": "30s", "keepalive_timeout": "15s"}
    caps = re.findall(r"client_max_body_size\s+(\S+);", text)
    s = Settings()
    size = {"8m": 8 << 20, "64m": 64 << 20, "2g": 2 << 30}
    assert [size[c] for c in caps] == [s.max_body_bytes, s.max_batch_bytes, s.max_trace_bytes]
    assert re.search(r"limit_conn per_client \d+;", text) and "server api:8000;" in text
    assert "proxy_set_header Host $host;" in text  # the allow-list sees the client's name
    nginx = shutil.which("nginx")
    if nginx is None:
        pytest.skip("nginx is not installed here (apt-get install nginx-light)")
    conf = tmp_path / "nginx.conf"
    conf.write_text(text.replace("server api:8000;", "server 127.0.0.1:8000;"))
    r = subprocess.run([nginx, "-t", "-c", str(conf), "-p", str(tmp_path),
                        "-e", str(tmp_path / "error.log")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "syntax is ok" in r.stderr
