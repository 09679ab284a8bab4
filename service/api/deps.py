"""Request-scoped dependencies: the database session and the auth rules of spec/api.md."""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from ..config import Settings
from ..db import transaction
from ..errors import BadRequest, Forbidden, Invalid, TooLarge, Unauthorized
from ..schemas import ErrorOut
from ..usecases import tokens

ERRORS: dict[int | str, dict] = {code: {"model": ErrorOut} for code in (401, 403, 404, 409, 413, 422)}


def settings(request: Request) -> Settings:
    return request.app.state.settings


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


def require_write(request: Request) -> None:
    """Writes are open only while no token was ever created, the server listens on loopback and
    the request did not come through a proxy (spec/api.md v1.1, "Auth")."""
    s: Settings = request.app.state.settings
    token = _bearer(request)
    local = s.loopback and not any(h in request.headers for h in PROXY_HEADERS)
    if token is None and local and getattr(request.app.state, "no_tokens_until", 0.0) > \
            time.monotonic():
        return
    with transaction(request.app.state.sessions) as session:
        if token is None:
            if local and _no_tokens(request, session):
                return
            raise Unauthorized("this server needs 'Authorization: Bearer <token>' "
                           "with write scope for writes")
        row = tokens.find(session, token)
        if row is None:
            raise Unauthorized("unknown or revoked token")
        if row.scope != "write":
            raise Forbidden(f"token {row.name!r} is read-only")


def require_read(request: Request) -> None:
    s: Settings = request.app.state.settings
    if not s.read_auth:
        return
    token = _bearer(request)
    if token is None:
        raise Unauthorized("reads need 'Authorization: Bearer <token>' "
                       "(PERFWARDEN_READ_AUTH=1)")
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
ReadAccess = Depends(require_read)
WriteAccess = Depends(require_write)
