"""Domain errors: what went wrong, in the service's words. No HTTP here: `create_app` maps each
kind to its HTTP code and the one JSON error shape, once (service/main.py)."""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError


class DomainError(Exception):
    """Base of every error a use case or repository raises for the caller to see."""

    code = "error"

    def __init__(self, message: str, field: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message, self.field = message, field
        if code is not None:
            self.code = code


class NotFound(DomainError):
    code = "not_found"


class Invalid(DomainError):
    code = "validation_error"


class BadRequest(DomainError):
    code = "bad_request"


class Conflict(DomainError):
    code = "conflict"


class TooLarge(DomainError):
    code = "too_large"


class Unauthorized(DomainError):
    code = "unauthorized"


class Forbidden(DomainError):
    code = "forbidden"


class Unavailable(DomainError):
    code = "unavailable"


def loc_to_field(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts)


def from_validation(e: ValidationError | list[Any], prefix: str = "") -> Invalid:
    """pydantic's errors as one Invalid naming the first field (and how many more there are)."""
    errors = e.errors() if isinstance(e, ValidationError) else e
    first = errors[0]
    field = loc_to_field(tuple(first.get("loc", ())))
    if prefix and field:
        field = f"{prefix}.{field}"
    msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    if first.get("type") == "missing":
        msg = "field required"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return Invalid(f"{field or 'body'}: {msg}{more}", field or None)
