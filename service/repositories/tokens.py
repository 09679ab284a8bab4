"""API tokens: shown once, stored as SHA-256 hashes."""
from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import ApiToken

PREFIX = "pw_"
SCOPES = ("read", "ingest", "write", "admin")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(session: Session, name: str, scope: str,
           benchmarks: list[str] | None = None) -> str:
    """A new token; an `ingest` token names at least one benchmark, no other scope names any."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    names = sorted({b.strip() for b in benchmarks or [] if b.strip()})
    if scope == "ingest" and not names:
        raise ValueError("an ingest token needs at least one --benchmark")
    if scope != "ingest" and names:
        raise ValueError(f"--benchmark is for ingest tokens; a {scope} token covers every "
                         "benchmark")
    token = PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(name=name, scope=scope, token_sha256=hash_token(token),
                         created_at=datetime.now(timezone.utc),
                         benchmarks=names if scope == "ingest" else None))
    session.flush()
    return token


def any_ever(session: Session) -> bool:
    """Whether a token was ever created (revoked ones count: revoking never reopens writes)."""
    return (session.scalar(select(func.count()).select_from(ApiToken)) or 0) > 0


def lookup(session: Session, token: str) -> ApiToken | None:
    return session.scalars(select(ApiToken).where(ApiToken.token_sha256 == hash_token(token),
                                                  ApiToken.revoked.is_(False))).first()


def list_tokens(session: Session) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).order_by(ApiToken.id)))


def revoke(session: Session, name: str) -> int:
    n = 0
    for t in session.scalars(select(ApiToken).where(ApiToken.name == name, ApiToken.revoked.is_(False))):
        t.revoked = True
        n += 1
    return n
