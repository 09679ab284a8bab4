"""The guard in front of every route: one request-body size limit (a larger one only for the
routes that take a raw file or a run batch) and, where a body is JSON, `Content-Type:
application/json` (a page on another origin can send `text/plain` without asking first; it
cannot send `application/json`). Each body is due, all of it, by a deadline (a client that sends
half a body and waits is answered `408` and let go), and the bodies one process holds in memory
at once stay under a cap (`503`, try again). A refusal is the one JSON error shape on one line:
`413` past the limit, `415` for another content type, `400` for a bad `Content-Length`."""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import Settings

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Route:
    """A route whose body is not an ordinary JSON request: its own size limit, its content
    type, and whether the guard streams it through (the route caps it again while reading)."""
    method: str
    path: re.Pattern[str]
    limit: Callable[[Settings], int]
    what: str
    json: bool
    streamed: bool


SPECIAL = (
    # a trace is a raw file of up to PERFWARDEN_MAX_TRACE_BYTES, streamed to storage
    Route("POST", re.compile(r"/api/v1/runs/[^/]+/traces"), lambda s: s.max_trace_bytes,
          "trace upload", json=False, streamed=True),
    Route("POST", re.compile(r"/api/v1/traces/stage"), lambda s: s.max_trace_bytes,
          "trace upload", json=False, streamed=True),
    Route("POST", re.compile(r"/api/v1/runs/batch"), lambda s: s.max_batch_bytes, "run batch",
          json=True, streamed=False),
)


def _special(method: str, path: str) -> Route | None:
    for r in SPECIAL:
        if r.method == method and r.path.fullmatch(path):
            return r
    return None


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json"


class Guard:
    """ASGI middleware: checks the declared size and the content type before the route runs,
    and reads an ordinary body through the limit (a chunked body has no declared size)."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self.app, self.settings = app, settings
        self.memory = Memory(settings.max_inflight_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        special = _special(scope["method"], scope["path"])
        limit = special.limit(self.settings) if special else self.settings.max_body_bytes
        what = special.what if special else "request body"
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                await refuse(send, 400, "bad_request", "invalid Content-Length header")
                return
            if int(declared) > limit:
                await refuse(send, 413, "too_large", f"{what} is larger than the {limit:,}-byte "
                              "limit")
                return
        has_body = (declared is not None and int(declared) > 0) or \
            "chunked" in headers.get("transfer-encoding", "").lower()
        wants_json = special.json if special else True
        if has_body and wants_json and not _is_json(headers.get("content-type", "")):
            got = headers.get("content-type") or "none"
            await refuse(send, 415, "unsupported_media_type", f"this endpoint takes "
                          f"'Content-Type: application/json' (got {got[:100]!r})")
            return
        if not has_body:
            await self.app(scope, receive, send)
            return
        size_hint = int(declared) if declared is not None else limit
        timed = _Deadline(receive, self.settings.body_timeout_s +
                          size_hint / self.settings.body_min_bytes_s)
        if special and special.streamed:  # the route reads it through the same deadline
            await timed.run(self.app, scope, send)
            return
        await self._buffered(scope, send, _replay_into(receive), timed, declared, limit, what)

    async def _buffered(self, scope: Scope, send: Send, replay: Callable[[bytes], Receive],
                        timed: _Deadline, declared: str | None, limit: int, what: str) -> None:
        """An ordinary body read whole, through the limit, the deadline and the memory cap,
        then handed to the route."""
        held = int(declared or 0)
        if not self.memory.take(held):
            await _busy(send)
            return
        try:
            body, more, size = [], True, 0
            while more:
                message = await timed()
                if message["type"] == "http.disconnect":
                    if timed.expired:
                        await _too_slow(send, timed.seconds)
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    await refuse(send, 413, "too_large", f"{what} is larger than the "
                                 f"{limit:,}-byte limit")
                    return
                if size > held:  # more than declared (or none was): held as it arrives
                    if not self.memory.take(len(chunk)):
                        await _busy(send)
                        return
                    held += len(chunk)
                body.append(chunk)
                more = message.get("more_body", False)
            await self.app(scope, replay(b"".join(body)), send)
        finally:
            self.memory.give(held)


class Memory:
    """The request bytes one process holds in memory at once, against a cap."""

    def __init__(self, cap: int):
        self.cap, self.held = cap, 0

    def take(self, n: int) -> bool:
        if self.held + n > self.cap:
            return False
        self.held += n
        return True

    def give(self, n: int) -> None:
        self.held -= n


class _Deadline:
    """`receive` for one request's body, all of it due by a total deadline: past it, the body
    reads as a disconnect (the route stops) and the client gets `408`."""

    def __init__(self, receive: Receive, seconds: float):
        self.receive, self.seconds = receive, seconds
        self.due = time.monotonic() + seconds
        self.expired = self.done = False

    async def __call__(self) -> Message:
        if self.done:  # the body is in: what follows (a disconnect) is waited for as usual
            return await self.receive()
        with anyio.move_on_after(max(0.0, self.due - time.monotonic())):
            message = await self.receive()
            self.done = message["type"] != "http.request" or not message.get("more_body")
            return message
        self.expired = True
        return {"type": "http.disconnect"}

    async def run(self, app: ASGIApp, scope: Scope, send: Send) -> None:
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await app(scope, self, sending)
        except Exception:
            if not self.expired:
                raise
        if self.expired and not started:
            await _too_slow(send, self.seconds)


async def _too_slow(send: Send, seconds: float) -> None:
    await refuse(send, 408, "request_timeout", f"the request body did not arrive within "
                 f"{seconds:.0f} s")


async def _busy(send: Send) -> None:
    await refuse(send, 503, "busy", "the server holds too many request bodies in memory; try "
                 "again in a moment", [(b"retry-after", b"1")])


def _replay_into(receive: Receive) -> Callable[[bytes], Receive]:
    return lambda body: _replay(body, receive)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, as one message; then whatever the client sends next."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def refuse(send: Send, status: int, code: str, message: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """The one JSON error shape, sent before the app runs (the connection is closed after)."""
    payload = json.dumps({"error": {"status": status, "code": code, "message": message,
                                    "field": None}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"), *(extra or [])]})
    await send({"type": "http.response.body", "body": payload})
