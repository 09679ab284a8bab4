"""The guard in front of every route: one request-body size limit (a larger one only for the
routes that take a raw file or a run batch) and, where a body is JSON, `Content-Type:
application/json` (a page on another origin can send `text/plain` without asking first; it
cannot send `application/json`). A refusal is the one JSON error shape on one line: `413` past
the limit, `415` for another content type, `400` for a bad `Content-Length`."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

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
                await _refuse(send, 400, "bad_request", "invalid Content-Length header")
                return
            if int(declared) > limit:
                await _refuse(send, 413, "too_large", f"{what} is larger than the {limit:,}-byte "
                              "limit")
                return
        has_body = (declared is not None and int(declared) > 0) or \
            "chunked" in headers.get("transfer-encoding", "").lower()
        wants_json = special.json if special else True
        if has_body and wants_json and not _is_json(headers.get("content-type", "")):
            got = headers.get("content-type") or "none"
            await _refuse(send, 415, "unsupported_media_type", f"this endpoint takes "
                          f"'Content-Type: application/json' (got {got[:100]!r})")
            return
        if not has_body or (special and special.streamed):
            await self.app(scope, receive, send)
            return
        body, more, size = [], True, 0
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _refuse(send, 413, "too_large", f"{what} is larger than the {limit:,}-byte "
                              "limit")
                return
            body.append(chunk)
            more = message.get("more_body", False)
        await self.app(scope, _replay(b"".join(body), receive), send)


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


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    payload = json.dumps({"error": {"status": status, "code": code, "message": message,
                                    "field": None}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": payload})
