"""PR comments the bot keeps up to date."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from ..models.base import NAME, Base


class PrComment(Base):
    """Where the bot's one comment per (repository, PR, benchmark, baseline) lives."""

    __tablename__ = "pr_comments"
    __table_args__ = (UniqueConstraint("repository", "pr", "benchmark", "baseline",
                                       name="uq_pr_comment"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository: Mapped[str] = mapped_column(String(NAME), nullable=False)
    pr: Mapped[int] = mapped_column(Integer, nullable=False)
    benchmark: Mapped[str] = mapped_column(String(NAME), nullable=False)
    baseline: Mapped[str] = mapped_column(String(NAME), nullable=False)
    comment_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    verdict: Mapped[str] = mapped_column(String(16), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
