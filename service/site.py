"""The pages served beside the API. A site (the dashboard is one) registers itself as an entry
point of the group `perfwarden.site` of the installed package; the app mounts every site it
finds there, so the service names no site and a site builds on the service, one way."""
from __future__ import annotations

from importlib.metadata import entry_points
from typing import Protocol

from fastapi import FastAPI, Request
from fastapi.responses import Response

GROUP = "perfwarden.site"


class Site(Protocol):
    """What the app asks of a site: its routes, which paths are its pages (their errors are
    pages too), an error as a page, and the work its first view would otherwise pay for."""

    def mount(self, app: FastAPI) -> None: ...

    def is_page(self, path: str) -> bool: ...

    def error_page(self, request: Request, status: int, message: str) -> Response: ...

    def warm(self) -> None: ...


def installed() -> list[Site]:
    """The sites the installed package registers, by entry point name."""
    return [ep.load() for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name)]
