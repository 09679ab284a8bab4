"""Attribution: which config key explains the run means."""
from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    Field,
)


class FactorOut(BaseModel):
    key: str
    levels: list[Any]
    effect: float
    p_value: float | None = Field(description="the key's F-test p-value, uncorrected")
    p_corrected: float | None = Field(None, description="p-value Holm-corrected across the keys")
    explains: float = Field(description="share of the outcome's variation, 0..1")
    level_values: dict[str, float]


class AttributionOut(BaseModel):
    benchmark: str
    metric: str
    runs: int
    factors: list[FactorOut]
    finding: str
    spread_factors: list[FactorOut] | None = None
    spread_finding: str | None = None
