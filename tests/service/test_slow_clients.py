"""Hostile clients at the HTTP layer: a Host name of another site on a loopback server (DNS
rebinding) for reads and pages too, half-sent headers, a body that never finishes, and more
request bytes at once than the process may hold."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest

from tests.conftest import minimal_run

# it measures time: alone, never beside another test; and on SQLite alone: connections, headers,
# bodies and the Host allow-list are the HTTP layer's, the same over either database
pytestmark = [pytest.mark.serial, pytest.mark.one_database]


def _app(settings, **over):
    from service.main import create_app

    return create_app(settings.model_copy(update=over))


@pytest.mark.parametrize("path", ["/api/v1/runs", "/", "/api/v1/health", "/benchmarks/bench-a"])
def test_a_rebound_name_reads_nothing_on_a_loopback_server(settings, path):
    from fastapi.testclient import TestClient

    with TestClient(_app(settings), base_url="http://attacker.example",
                    client=("127.0.0.1", 50000)) as c:
        r = c.get(path)
        assert r.status_code == 400 and "\n" not in r.text
        assert r.json()["error"]["code"] == "bad_host"
        assert "attacker.example" in r.json()["error"]["message"]
    with TestClient(_app(settings), base_url="http://127.0.0.1:8000",
                    client=("127.0.0.1", 50000)) as c:
        assert c.get("/api/v1/health").status_code == 200


def test_the_allow_list_names_a_deployment(settings):
    from fastapi.testclient import TestClient

    app = _app(settings, allowed_hosts="perf.example.com, Perf.Internal")
    with TestClient(app, base_url="http://perf.internal:8443", client=("127.0.0.1", 1)) as c:
        assert c.get("/api/v1/health").status_code == 200
    beyond = _app(settings, bind_host="0.0.0.0", allowed_hosts="perf.example.com")
    with TestClient(beyond, base_url="http://localhost", client=("10.0.0.2", 1)) as c:
        assert c.get("/api/v1/health").status_code == 400  # only the listed name there
    with TestClient(beyond, base_url="https://perf.example.com", client=("10.0.0.2", 1)) as c:
        assert c.get("/api/v1/health").status_code == 200


def _asgi_post(app, body_chunks, pause_s: float, headers: dict) -> httpx.Response:
    """A POST whose body arrives in chunks with pauses between them (in the app's own loop)."""
    async def body():
        for chunk in body_chunks:
            yield chunk
            await asyncio.sleep(pause_s)

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app, client=("127.0.0.1", 1)),
                                     base_url="http://localhost") as c:
            return await c.post("/api/v1/runs", content=body(), headers=headers)
    return asyncio.run(go())


def test_a_body_that_never_finishes_is_answered_408(settings):
    from service.api.guard import Guard

    seen = []

    async def app(scope, receive, send):  # never reached: the guard answers first
        seen.append(scope["path"])

    guard = Guard(app, settings.model_copy(update={"body_timeout_s": 0.5,
                                                   "body_min_bytes_s": 1e9}))
    data = json.dumps(minimal_run()).encode()
    t0 = time.monotonic()
    r = _asgi_post(guard, [data[:10], data[10:20], data[20:]], 0.4,
                   {"content-type": "application/json", "content-length": str(len(data))})
    assert r.status_code == 408 and r.json()["error"]["code"] == "request_timeout"
    assert time.monotonic() - t0 < 2 and seen == []


def test_request_bytes_in_memory_are_capped(settings):
    from service.api.guard import Guard

    release = asyncio.Event()

    async def app(scope, receive, send):
        await receive()
        await release.wait()
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    guard = Guard(app, settings.model_copy(update={"max_inflight_body_bytes": 3000}))
    body = b"[" + b" " * 2000 + b"]"
    headers = {"content-type": "application/json"}

    async def go():
        transport = httpx.ASGITransport(guard, client=("127.0.0.1", 1))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            first = asyncio.create_task(c.post("/api/v1/runs", content=body, headers=headers))
            await asyncio.sleep(0.1)
            second = await c.post("/api/v1/runs", content=body, headers=headers)
            release.set()
            done = await first
            third = await c.post("/api/v1/runs", content=body, headers=headers)
            return done, second, third

    first, second, third = asyncio.run(go())
    assert first.status_code == 201 and third.status_code == 201  # the bytes were given back
    assert second.status_code == 503 and second.headers["retry-after"] == "1"
    assert second.json()["error"]["code"] == "busy" and "\n" not in second.text


def test_half_sent_headers_are_let_go_and_the_gate_still_answers(settings):
    import uvicorn

    from service import serving

    s = settings.model_copy(update={"header_timeout_s": 1.0, "max_connections": 2000})
    opts = serving.options(s)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(_app(s), host="127.0.0.1", port=port,
                                           log_level="warning", **opts))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    try:
        half = []
        for _ in range(300):
            con = socket.create_connection(("127.0.0.1", port))
            con.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            half.append(con)
        silent = socket.create_connection(("127.0.0.1", port))  # sends nothing at all
        r = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=5)
        assert r.status_code == 200  # served beside them
        time.sleep(2.5)
        for con in half + [silent]:
            con.settimeout(2)
            assert con.recv(1) == b""  # closed by the server
            con.close()
        assert len(server.server_state.connections) <= 1
    finally:
        server.should_exit = True
