"""Request-scoped dependencies: the database session and the auth rules of spec/api.md."""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from ..config import Settings
from ..db import transaction
from ..errors import BadRequest, Forbidden, Invalid, TooLarge, Unauthorized
from ..schemas import ErrorOut
from ..usecases import tokens


def errors(*codes: int) -> dict[int | str, dict]:
    """A route's documented error answers, each in the one error shape."""
    return {code: {"model": ErrorOut} for code in codes}




def settings(request: Request) -> Settings:
    return request.app.state.settings


def sessions(request: Request) -> sessionmaker:
    """The session factory, for a route whose work runs in the thread pool or in more than one
    unit of work (each use case opens its own transaction)."""
    return request.app.state.sessions


def db(request: Request) -> Iterator[Session]:
    """The request's unit of work. It commits when the route returns, before the response is
    sent (`scope="function"`): FastAPI's default ends a yield dependency after the response, so a
    client could read its own write before it was committed, or get a 2xx for a failed commit."""
    with transaction(request.app.state.sessions) as session:
        yield session


def _bearer(request: Request) -> str | None:
    h = request.headers.get("authorization", "")
    if h[:7].lower() == "bearer " and h[7:].strip():
        return h[7:].strip()
    return None


TOKEN_COOKIE = "perfwarden_token"
_NO_TOKENS_TTL_S = 1.0


def _no_tokens(request: Request, session) -> bool:
    """Whether no token exists; a 'none' answer is trusted for a second (a token created with
    the CLI closes open writes within that second)."""
    state = request.app.state
    now = time.monotonic()
    if getattr(state, "no_tokens_until", 0.0) > now:
        return True
    if tokens.any_ever(session):
        return False
    state.no_tokens_until = now + _NO_TOKENS_TTL_S
    return True


PROXY_HEADERS = ("forwarded", "x-forwarded-for")
CROSS_SITE = "a page on"  # an anonymous write from another site is 403, not 401
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _loopback_addr(host: str | None) -> bool:
    return host is not None and (host == "::1" or host.startswith("127.") or
                                 host == "::ffff:127.0.0.1")


def host_name(authority: str) -> str:
    """The name of a `Host` header value (`localhost:8000` -> `localhost`, `[::1]:80` -> `[::1]`)."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[:authority.find("]") + 1] if "]" in authority else authority
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def local_refusal(request: Request) -> str | None:
    """Why the request may not write anonymously, or None: it must come from a loopback peer
    address (never the server's configured host alone), name a loopback `Host`, carry no
    forwarding header (a proxy on this machine would make every peer loopback), and come from
    no other origin (`Origin` absent or this same loopback origin, `Sec-Fetch-Site` neither
    cross-site nor same-site)."""
    s: Settings = request.app.state.settings
    h = request.headers
    if not s.loopback:
        return "the server listens beyond loopback"
    peer = request.client.host if request.client else None
    if not _loopback_addr(peer):
        return f"the request came from {peer or 'an unknown address'}, not this machine"
    if any(name in h for name in PROXY_HEADERS):
        return "the request came through a proxy (Forwarded or X-Forwarded-For)"
    host = h.get("host", "")
    if host_name(host) not in LOOPBACK_NAMES:
        return f"the Host header {host[:100]!r} is not a loopback name"
    if h.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return f"{CROSS_SITE} another site (Sec-Fetch-Site)"
    origin = h.get("origin")
    if origin is not None and origin.strip().lower() not in (f"http://{host.lower()}",
                                                             f"https://{host.lower()}"):
        return f"{CROSS_SITE} another origin ({origin[:100]!r})"
    return None


@dataclass(frozen=True)
class Principal:
    """Who writes: a token (its name, scope and, for ingest, its benchmarks) or an anonymous
    local request (`name` None, every right)."""
    name: str | None
    scope: str
    benchmarks: frozenset[str] | None = None  # None: every benchmark

    def check_benchmarks(self, names: set[str]) -> None:
        """Forbidden unless the principal may post runs and traces of every one of `names`."""
        if self.benchmarks is None:
            return
        outside = sorted(set(names) - self.benchmarks)
        if outside:
            raise Forbidden(f"token {self.name!r} may post only for "
                            f"{', '.join(sorted(self.benchmarks))}, not {outside[0]!r}",
                            "benchmark")


# what each level of write lets through: ingest (runs and traces), write (also alert state),
# admin (baselines, run deletion, benchmark settings, alert evaluation)
LEVELS = {"ingest": ("ingest", "write", "admin"), "write": ("write", "admin"),
          "admin": ("admin",)}
ANONYMOUS = Principal(None, "admin")


def _writer(level: str):
    allowed = LEVELS[level]

    def require(request: Request) -> Principal:
        """Writes are anonymous only while no token was ever created, from this machine
        (local_refusal); otherwise they need a bearer token whose scope covers `level`
        (spec/api.md, "Auth"). A cookie never authorizes a write."""
        token = _bearer(request)
        why = local_refusal(request) if token is None else None
        if token is None and why is None and \
                getattr(request.app.state, "no_tokens_until", 0.0) > time.monotonic():
            request.state.principal = ANONYMOUS
            return ANONYMOUS
        with transaction(request.app.state.sessions) as session:
            if token is None:
                if why is None and _no_tokens(request, session):
                    request.state.principal = ANONYMOUS
                    return ANONYMOUS
                if why is not None and why.startswith(CROSS_SITE):
                    raise Forbidden(f"write refused: {why}")
                reason = f" ({why})" if why else ""
                raise Unauthorized("writes need 'Authorization: Bearer <token>'" + reason)
            row = tokens.find(session, token)
            if row is None:
                raise Unauthorized("unknown or revoked token")
            if row.scope not in allowed:
                raise Forbidden(f"token {row.name!r} ({row.scope}) cannot do this: it needs "
                                f"a token of scope {' or '.join(allowed)}")
            p = Principal(row.name, row.scope,
                          frozenset(row.benchmarks or ()) if row.scope == "ingest" else None)
        request.state.principal = p
        return p

    return require


require_ingest = _writer("ingest")
require_write = _writer("write")
require_admin = _writer("admin")


def principal(request: Request) -> Principal:
    """The writer its route's access dependency found."""
    return request.state.principal


def require_read(request: Request) -> None:
    """Reads need a token (any scope; the bearer header, or the dashboard's `perfwarden_token`
    cookie) when PERFWARDEN_READ_AUTH is on, or is unset while the server listens beyond
    loopback."""
    s: Settings = request.app.state.settings
    if not s.reads_need_token:
        return
    token = _bearer(request) or request.cookies.get(TOKEN_COOKIE) or None
    if token is None:
        raise Unauthorized("reads need 'Authorization: Bearer <token>' (or the "
                           f"{TOKEN_COOKIE} cookie); PERFWARDEN_READ_AUTH=off opens them")
    with transaction(request.app.state.sessions) as session:
        if tokens.find(session, token) is None:
            raise Unauthorized("unknown or revoked token")


async def read_capped(request: Request, limit: int, what: str) -> bytes:
    """The request body, refused with 413 past `limit` bytes (checked while streaming)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise TooLarge(f"{what} is larger than the {limit:,}-byte limit")
        except ValueError:
            raise BadRequest("invalid Content-Length header") from None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"{what} is larger than the {limit:,}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


_ALLOWED_QUERY: dict[int, frozenset[str]] = {}


def _query_names(dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


async def strict_query(request: Request) -> None:
    """An unknown query parameter is bad input on every endpoint, never silently ignored
    (`?pr=150` on an endpoint without `pr` must not answer everything)."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    allowed = _ALLOWED_QUERY.get(id(route))
    if allowed is None:
        allowed = _ALLOWED_QUERY[id(route)] = frozenset(_query_names(dependant))
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise Invalid(f"{unknown[0]}: unknown query parameter (this endpoint takes: {known})",
                      unknown[0])


# the route dependencies, declared once (routes write `session: SessionDep`,
# `dependencies=[ReadAccess]`)
SessionDep = Annotated[Session, Depends(db, scope="function")]
SettingsDep = Annotated[Settings, Depends(settings)]
SessionsDep = Annotated[sessionmaker, Depends(sessions)]
ReadAccess = Depends(require_read)
IngestAccess = Depends(require_ingest)
WriteAccess = Depends(require_write)
AdminAccess = Depends(require_admin)
