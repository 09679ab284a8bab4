"""Benchmarks."""
from __future__ import annotations

from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from .common import Name


class BenchmarkSummary(BaseModel):
    name: str
    runs: int
    latest: str | None
    default_branch: str
    bisect_command: str | None = None


class BenchmarkList(BaseModel):
    data: list[BenchmarkSummary]
    count: int


class BenchmarkPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default_branch: Name | None = None
    # the CMD of the alert's `perfwarden bisect ... -- CMD` line; "" clears it
    bisect_command: Annotated[str, Field(max_length=4096)] | None = None

    @model_validator(mode="after")
    def _something(self) -> BenchmarkPatch:
        if self.default_branch is None and self.bisect_command is None:
            raise ValueError("give default_branch or bisect_command")
        return self
