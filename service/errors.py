"""One JSON error shape for every failure: {"error": {"status", "code", "message", "field"}}."""
from __future__ import annotations

from pydantic import ValidationError


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field

    def body(self) -> dict:
        return {"error": {"status": self.status, "code": self.code, "message": self.message,
                          "field": self.field}}


def loc_to_field(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts)


def from_validation(e: ValidationError | list, prefix: str = "") -> ApiError:
    errors = e.errors() if isinstance(e, ValidationError) else e
    first = errors[0]
    field = loc_to_field(tuple(first.get("loc", ())))
    if prefix and field:
        field = f"{prefix}.{field}"
    msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    if first.get("type") == "missing":
        msg = "field required"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return ApiError(422, "validation_error", f"{field or 'body'}: {msg}{more}", field or None)


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found")
