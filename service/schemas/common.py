"""Shared field types, the one error body and query-string parsers of the API."""
from __future__ import annotations

import math
import re
from typing import Annotated, Any, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
)

from collectors.configkeys import HARDWARE_KEYS
from collectors.metrics import parse_thresholds as metric_thresholds

from ..errors import Invalid

NAME_MAX = 200


FIXED_SERIES_KEYS = HARDWARE_KEYS


Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]


OptName = Annotated[str | None, Field(default=None, max_length=NAME_MAX)]


METRIC_NAME = re.compile(r"^[A-Za-z0-9_.:/\-]+$")


ConfigValue = Union[StrictBool, StrictInt, StrictFloat, Annotated[str, Field(max_length=NAME_MAX)], None]


def finite_number(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("must be a number")
    if not math.isfinite(v):
        raise ValueError("must be a finite number")
    return float(v)


Sample = Annotated[float, BeforeValidator(finite_number)]


RunId = Annotated[StrictInt, Field(ge=1, le=2**31 - 1)]


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str
    field: str | None = None


class ErrorOut(BaseModel):
    error: ErrorBody


def parse_run_ids(text: str) -> list[int]:
    """`run_ids=1,2,3` of the compare view (API and dashboard)."""
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise Invalid("run_ids: expected comma-separated run ids", "run_ids") from None
    if not ids or len(ids) > 1000 or any(i < 1 or i > 2**31 - 1 for i in ids):
        raise Invalid("run_ids: expected 1 to 1000 run ids", "run_ids")
    return ids


def parse_vary(text: str | None) -> list[str] | None:
    """`vary=a,b` of the compare view (and `metrics=a,b`)."""
    return [k.strip() for k in text.split(",") if k.strip()] if text else None


def parse_thresholds(text: str | None) -> dict[str, float] | None:
    """`thresholds=tok_s=2,kv_capacity_tokens=0` of the compare view: the gate's thresholds."""
    if not text:
        return None
    try:
        return {k.strip(): v for k, v in
                metric_thresholds([i.strip() for i in text.split(",")]).items()}
    except ValueError as e:
        raise Invalid(f"thresholds: {e}", "thresholds") from None
