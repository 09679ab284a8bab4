"""What the server-side commands share: the settings, the HTTP client of `--server`, exit codes."""
from __future__ import annotations

import os

from collectors.errors import (
    EXIT_DATAERR,
    EXIT_ERROR,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CliError,
    Unreachable,
    for_status,
)

EXIT_PASS, EXIT_REGRESSION, EXIT_INCONCLUSIVE = 0, 1, 3
# every error's code (2 any other, 64 usage, 65 bad input, 69 unreachable; collectors/errors.py)
ERROR_CODES = frozenset({EXIT_ERROR, EXIT_USAGE, EXIT_DATAERR, EXIT_UNAVAILABLE})
EXIT_BISECT_ABORT = 128  # `git bisect run`: stop the bisect (an error of ours, not the commit's)


def settings():
    """The settings from the environment; a bad PERFWARDEN_* value is one line, exit 2."""
    from .config import Settings

    try:
        return Settings()
    except Exception as e:  # noqa: BLE001 - a bad environment variable: one line, exit 2
        raise CliError(f"bad PERFWARDEN_* setting: {str(e).splitlines()[0]}") from None


def redact(url: str) -> str:
    """A database URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':')[0]}:***@{host}" if ":" in creds else url
    return url


def _client(server: str):
    import httpx

    headers = {}
    token = os.environ.get("PERFWARDEN_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=60)


def api(server: str, method: str, path: str, **kw) -> dict:
    """One request to `server` (PERFWARDEN_TOKEN as its bearer token); its JSON answer, or
    CliError with the server's one-line message: Unreachable (69) when it cannot be reached or
    answers 5xx, Refused (65 for an invalid or unknown input) for 4xx."""
    import httpx

    try:
        with _client(server) as c:
            r = c.request(method, path, **kw)
    except httpx.HTTPError as e:
        raise Unreachable(f"cannot reach {server}: {e}") from None
    if r.status_code == 204:
        return {}
    try:
        body = r.json()
    except ValueError:
        if r.status_code >= 500:
            raise Unreachable(f"{server} answered {r.status_code}") from None
        raise CliError(f"{server} answered {r.status_code} without JSON") from None
    if r.status_code >= 400:
        msg = body.get("error", {}).get("message") if isinstance(body, dict) else None
        raise for_status(f"{server} answered {r.status_code}: {msg or body}", r.status_code)
    return body


def pending_evidence(server: str, run_ids: list[int], call=api) -> str | None:  # noqa: ANN001
    """`profiler evidence pending: ...` when a trace of the candidate runs is not analyzed yet
    (its evidence is not in the verdict's tables), else None."""
    pending = {rid: sum(t.get("state") == "pending" for t in
                        call(server, "GET", f"/api/v1/runs/{rid}").get("traces") or [])
               for rid in run_ids}
    waiting = {rid: n for rid, n in pending.items() if n}
    if not waiting:
        return None
    return (f"profiler evidence pending: {sum(waiting.values())} trace(s) of run(s) "
            f"{', '.join(map(str, waiting))} not analyzed yet")
