"""Explain: the key that explains a metric over a factorial matrix, the kernels that tell its
levels apart, the deterministic-mode check and the decision sentence."""
from __future__ import annotations

from pydantic import BaseModel, Field

from ..attribution.schemas import FactorOut


class KernelChange(BaseModel):
    name: str
    shown: str = Field(description="the name as tables show it: the part that differs kept")
    outlier_share: float = Field(
        description="mean share of the traced kernel time at the outlier levels, 0..1")
    reference_share: float = Field(description="the same at the other levels, 0..1")


class TraceDiffOut(BaseModel):
    key: str
    outlier_levels: list[str]
    reference_levels: list[str]
    traced_levels: list[str] = Field(description="levels with at least one profiled run")
    what: str = Field(description="`kernels`, or `host operators` for CPU traces")
    only_at_outliers: list[KernelChange]
    gone_at_outliers: list[KernelChange]
    share_changes: list[KernelChange]


class DeterministicOut(BaseModel):
    runs: int = Field(description="deterministic-mode runs of the matrix's cells")
    identical_runs: int = Field(description="of them, runs whose repeats are all bitwise identical")
    repeats: int
    identical_repeats: int
    at_levels: list[str] = Field(description="the explaining key's levels those runs cover")
    command: str | None = Field(None, description="the command that would make them, when none exist")


class ExplainOut(BaseModel):
    benchmark: str
    metric: str
    runs: int
    gpu: str
    factors: list[FactorOut]
    key: str | None
    diff: TraceDiffOut | None
    deterministic: DeterministicOut
    decision: str
