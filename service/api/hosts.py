"""The Host allow-list, in front of every request (reads and pages too): a page on another site
that rebinds its DNS name to 127.0.0.1 reaches a loopback server with its own name in `Host`,
and is refused before any route runs. On a loopback bind the loopback names are allowed, plus
PERFWARDEN_ALLOWED_HOSTS; on another bind, where PERFWARDEN_ALLOWED_HOSTS is set, only those
(unset: any name, the deployment's proxy decides). A refusal is `400` in the one JSON error
shape on one line."""
from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ..config import Settings
from .deps import LOOPBACK_NAMES, host_name
from .guard import refuse


class Hosts:
    def __init__(self, app: ASGIApp, settings: Settings):
        self.app = app
        listed = settings.allowed_host_names
        self.allowed: frozenset[str] | None = (LOOPBACK_NAMES | listed if settings.loopback
                                               else listed or None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.allowed is not None:
            host = next((v.decode("latin-1") for k, v in scope.get("headers", [])
                         if k == b"host"), "")
            if host_name(host) not in self.allowed:
                await refuse(send, 400, "bad_host", f"the Host header {host[:100]!r} is not a "
                             "name this server answers to (PERFWARDEN_ALLOWED_HOSTS)")
                return
        await self.app(scope, receive, send)
