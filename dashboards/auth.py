"""Signing in to the dashboard: /login's form posts a token (any scope) as JSON and gets the
`perfwarden_token` cookie (HttpOnly, SameSite=Strict, Secure behind TLS); /logout clears it.
The cookie authorizes reads only (service/api/deps.py): a write still needs the bearer header."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ConfigDict, Field

from service.api.deps import TOKEN_COOKIE, sessions
from service.db import transaction
from service.errors import Unauthorized
from service.usecases import tokens

COOKIE_MAX_AGE_S = 30 * 24 * 3600


class LoginIn(BaseModel):
    """A token of any scope and the local path to go to after signing in."""

    model_config = ConfigDict(extra="forbid")
    token: Annotated[str, Field(min_length=1, max_length=200)]
    next: Annotated[str, Field(max_length=2000)] = "/"


def local_path(target: str | None) -> str:
    """Where to go after signing in: a path on this server only (never `//host` or a URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _secure(request: Request) -> bool:
    """Behind TLS (the request's scheme, or the proxy's X-Forwarded-Proto): the cookie is
    Secure. Trusting the header here only ever restricts the cookie, never widens it."""
    return request.url.scheme == "https" or \
        request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() == "https"


def _form(request: Request, templates: Jinja2Templates, target: str) -> HTMLResponse:
    return templates.TemplateResponse(request, "login.html", {
        "now": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "title":
        "sign in · perfwarden", "next": target})


def login_href(path: str) -> str:
    return "/login?" + urlencode({"next": local_path(path)})


def add_routes(templates: Jinja2Templates) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/login", response_class=HTMLResponse)
    def login_form(request: Request, next: str | None = None):  # noqa: A002 - the query's name
        return _form(request, templates, local_path(next))

    @router.post("/login")
    def login(request: Request, body: LoginIn) -> Response:
        """JSON, as every body this server takes (service/api/guard.py): a page on another
        site cannot post it without asking first, so it cannot sign a visitor in."""
        with transaction(sessions(request)) as session:
            if tokens.find(session, body.token.strip()) is None:
                raise Unauthorized("unknown or revoked token", "token")
        target = local_path(body.next)
        resp = JSONResponse({"next": target})
        resp.set_cookie(TOKEN_COOKIE, body.token.strip(), max_age=COOKIE_MAX_AGE_S, path="/",
                        httponly=True, samesite="strict", secure=_secure(request))
        return resp

    @router.post("/logout")
    def logout(request: Request) -> Response:
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(TOKEN_COOKIE, path="/", httponly=True, samesite="strict",
                           secure=_secure(request))
        return resp

    return router
