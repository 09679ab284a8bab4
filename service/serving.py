"""How `perfwarden serve` runs uvicorn against slow clients: a connection must send each
request's headers within PERFWARDEN_HEADER_TIMEOUT_S of opening (or of the request's first
byte), or it is closed, so half-sent requests cannot hold sockets and file descriptors for
ever (uvicorn itself times out only idle keep-alive connections); the process's open-file
limit is raised to its hard limit; past `limit_concurrency` connections uvicorn answers 503.
Body deadlines are the app's (api/guard.py). A server process freezes the objects it holds
once it has started (`settle`), so a full garbage collection walks only what requests made.
"""
from __future__ import annotations

import asyncio
import gc
import resource
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .config import Settings

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
except ImportError:  # httptools is optional to uvicorn: the pure-Python parser then
    Base = H11Protocol  # type: ignore[assignment,misc]


class HeaderDeadline(Base):
    """uvicorn's HTTP protocol, with a deadline on each request's headers."""

    header_timeout_s: float | None = None  # None: PERFWARDEN_HEADER_TIMEOUT_S (worker processes)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._headers_due: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        if self._headers_due is None:
            if HeaderDeadline.header_timeout_s is None:
                HeaderDeadline.header_timeout_s = Settings().header_timeout_s
            self._headers_due = self.loop.call_later(HeaderDeadline.header_timeout_s,
                                                     self._too_slow)

    def _disarm(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None

    def _too_slow(self) -> None:
        self._headers_due = None
        if not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        before = self.cycle
        if before is None or before.response_complete:  # a new request's bytes
            self._arm()
        super().data_received(data)
        if self.cycle is not before:  # its headers are in: the request has begun
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def settle() -> int:
    """The objects of a started server process (its modules, the app: about 246,000) moved out
    of the garbage collector's reach, after one last collection; returns how many. A full
    collection then walks only what requests made: statsmodels' Holm correction runs one on
    every call (the gate across metrics, attribution, explain), 110 ms a call before, under
    0.1 ms after. What was live at start stays live for the process's life anyway."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def raise_open_files() -> int:
    """The soft open-file limit raised to the hard one; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


def options(settings: Settings) -> dict[str, Any]:
    """uvicorn.run's keyword arguments for these settings (the protocol by name, so uvicorn's
    worker processes import it)."""
    raise_open_files()
    HeaderDeadline.header_timeout_s = settings.header_timeout_s
    return {"http": "service.serving:HeaderDeadline",
            "limit_concurrency": settings.max_connections, "timeout_keep_alive": 5}
