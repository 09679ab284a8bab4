"""Journeys: a user's path through several features with real parts (a `perfwarden serve`
process on a free loopback port, the real command lines, real git repositories)."""
from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

import pytest

from .shell import PERFWARDEN, Served, env


@pytest.fixture
def served(tmp_path):
    """`perfwarden serve` in its own process, on SQLite in the test's folder."""
    yield from _serve(tmp_path)


@pytest.fixture(scope="module")
def served_shared(tmp_path_factory):
    """One `perfwarden serve` for the tests of a module that only add runs of their own."""
    yield from _serve(tmp_path_factory.mktemp("served"))


def _serve(tmp_path, *args: str, **extra_env: str):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = f"sqlite:///{tmp_path / 'served.db'}"
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen([PERFWARDEN, "serve", "--port", str(port), *args], stdout=log,
                            stderr=subprocess.STDOUT, cwd=tmp_path,
                            env=env(PERFWARDEN_DATABASE_URL=db,
                                    PERFWARDEN_DATA_DIR=str(tmp_path / "data"), **extra_env))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600  # a shared 2-core machine can be slow to import or seed
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"serve exited: {(tmp_path / 'serve.log').read_text()}")
            try:
                urllib.request.urlopen(url + "/api/v1/health", timeout=2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("serve did not answer in 600 s")
        yield Served(url, db)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()

