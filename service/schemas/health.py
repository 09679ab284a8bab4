"""GET /api/v1/health's answer."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Revisions(BaseModel):
    revision: str | None  # the database's migration revision
    head: str  # the revision this version needs


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    database: Revisions
