"""Named baselines."""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from ..schemas.common import Name, RunId


class BaselineIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    benchmark: Name
    run_ids: Annotated[list[RunId], Field(min_length=1, max_length=10_000)]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        v = v.strip()
        if not v or any(c in v for c in "/\n\r\t"):
            raise ValueError("must be a non-empty name without slashes or control characters")
        return v


class BaselineMove(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_ids: Annotated[list[RunId], Field(min_length=1, max_length=10_000)]


class BaselineOut(BaseModel):
    id: int
    name: str
    benchmark: str
    run_ids: list[int]
    created_at: str
    updated_at: str
    history: list[dict[str, Any]] = []


class BaselineList(BaseModel):
    data: list[BaselineOut]
    count: int
