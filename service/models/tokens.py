"""API tokens (hashed). Scopes: `read` (reads), `ingest` (reads, and runs and traces of the
benchmarks in `benchmarks`), `write` (reads and every write but the admin-only ones), `admin`
(everything)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Integer,
    String,
)
from sqlalchemy.orm import Mapped, mapped_column

from .base import NAME, Base


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), nullable=False)
    scope: Mapped[str] = mapped_column(String(8), nullable=False)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    benchmarks: Mapped[list | None] = mapped_column(JSON, nullable=True)  # ingest only
    revoked: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
