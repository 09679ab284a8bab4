"""Lanes: the CPU-bound reads (change points, noise, attribution, explain, a trace's timeline,
and every dashboard page) enter the app through their own gate of PERFWARDEN_HEAVY_READS at a
time per process, so however many clients ask for them, the gate (`POST /api/v1/gate`), ingest
and every other request find the thread pool and the database pool free for them. A heavy read
past the limit waits its turn (up to PERFWARDEN_HEAVY_QUEUE of them); one more is refused with
`503` and `Retry-After`, in the one JSON error shape on one line.

With a reads server (`serve --read-workers N`: PERFWARDEN_READS_SOCKET), an API process runs no
heavy read itself: it passes the request on over that Unix socket, with the client's address,
and streams the answer back; the reads server's processes run at a lower scheduling priority,
so on busy cores the gate's process gets the CPU first (the interpreter lock of one process
cannot be shared out that way). Only the reads server (PERFWARDEN_READS_SERVER) takes a client
address from a request, and only from one that came over its socket (which has no peer
address); where the socket does not answer, the API process serves the read itself."""
from __future__ import annotations

import logging
import re
import sys

import anyio
import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

from ..config import Settings
from .guard import refuse

HEAVY = re.compile(r"/api/v1/(changepoints|noise|attribution|explain|traces/[^/]+/timeline)"
                   r"|/|/benchmarks/[^/]+(/matrix)?|/runs/[^/]+|/compare|/alerts"
                   r"|/experiments/[^/]+")


SWITCH_S = 0.0005
PEER = b"x-perfwarden-peer"  # host:port of the client, set by the API process that passes it on
SCHEME = b"x-perfwarden-scheme"
HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"trailer",
       b"proxy-connection", PEER, SCHEME}
log = logging.getLogger("perfwarden.lanes")


def is_heavy(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and HEAVY.fullmatch(path) is not None


class Lanes:
    """ASGI middleware: a heavy read takes one of the lane's places for its whole run."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self.app, self.size, self.queue = app, settings.heavy_reads, settings.heavy_queue
        # a thread back from I/O (the gate between its queries) waits for the interpreter lock
        # at most this long while a heavy read computes in another thread (Python's default,
        # 5 ms, adds up to 5 ms to each of the gate's database round trips)
        sys.setswitchinterval(SWITCH_S)
        self._limiter: anyio.Semaphore | None = None  # made on the event loop, on first use
        self.waiting = 0
        self.reads_server = settings.reads_server
        self.socket = None if settings.reads_server else settings.reads_socket
        self._reads: httpx.AsyncClient | None = None

    async def _pass_on(self, scope: Scope, send: Send) -> bool:
        """The heavy read answered by the reads server (False, nothing sent: it did not answer,
        and this process serves the read)."""
        if self._reads is None:
            self._reads = httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(uds=self.socket), base_url="http://reads",
                timeout=httpx.Timeout(None, connect=5.0))
        client = scope.get("client") or ("", 0)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP]
        headers += [(PEER, f"{client[0]}:{client[1]}".encode("latin-1")),
                    (SCHEME, scope.get("scheme", "http").encode("latin-1"))]
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        request = self._reads.build_request(scope["method"], target.decode("latin-1"),
                                            headers=headers)
        try:
            response = await self._reads.send(request, stream=True)
        except httpx.TransportError as e:
            log.warning("the reads server did not answer (%s); serving the read here", e)
            return False
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw
                                    if k.lower() not in HOP]})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.reads_server:
            scope = passed_on(scope)
        if scope["type"] != "http" or not is_heavy(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        if self.socket is not None and await self._pass_on(scope, send):
            return
        if self._limiter is None:
            self._limiter = anyio.Semaphore(self.size)
        if self._limiter.value == 0 and self.waiting >= self.queue:
            await refuse(send, 503, "busy", f"{self.queue} heavy reads are already waiting; "
                         "try again in a moment", [(b"retry-after", b"1")])
            return
        self.waiting += 1
        try:
            await self._limiter.acquire()
        finally:
            self.waiting -= 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._limiter.release()


def passed_on(scope: Scope) -> Scope:
    """A request as the reads server takes it: one that came over its Unix socket (no peer
    address) with the API process's PEER header gets that client address (and scheme); from
    anywhere else those headers are dropped, never believed."""
    headers = scope.get("headers", [])
    given = {k.lower(): v for k, v in headers if k.lower() in (PEER, SCHEME)}
    if not given:
        return scope
    kept = [(k, v) for k, v in headers if k.lower() not in (PEER, SCHEME)]
    if scope.get("client") is not None or PEER not in given:
        return {**scope, "headers": kept}
    host, _, port = given[PEER].decode("latin-1").rpartition(":")
    scheme = given.get(SCHEME, b"http").decode("latin-1")
    return {**scope, "headers": kept, "client": (host, int(port) if port.isdigit() else 0),
            "scheme": scheme if scheme in ("http", "https") else "http"}
