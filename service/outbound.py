"""Outbound HTTP (webhooks, the GitHub API) with a total deadline per attempt: connecting,
sending and reading the whole answer together, not each read apart, so a receiver that
trickles a byte at a time holds an attempt no longer than the deadline."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx


class DeadlineExceeded(httpx.TimeoutException):
    """The attempt ran past its total deadline (an httpx error, so callers that handle
    transport errors handle it too)."""


def request(method: str, url: str, deadline_s: float, **kw: Any) -> httpx.Response:
    """One request, answer read in full, all within `deadline_s` seconds (httpx's own
    per-phase timeouts stay as a second bound)."""
    async def attempt() -> httpx.Response:
        async with httpx.AsyncClient(timeout=deadline_s) as client:
            r = await client.request(method, url, **kw)
            await r.aread()
            return r

    async def bounded() -> httpx.Response:
        try:
            return await asyncio.wait_for(attempt(), deadline_s)
        except asyncio.TimeoutError:
            raise DeadlineExceeded(f"no complete answer within {deadline_s:g} s") from None

    return asyncio.run(bounded())
