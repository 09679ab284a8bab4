"""API tokens: create (shown once), revoke, list, and the checks the auth rules need."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..db import Session
from ..repositories import tokens as repo

if TYPE_CHECKING:
    from ..models import ApiToken


SCOPES = repo.SCOPES


def create(session: Session, name: str, scope: str, benchmarks: list[str] | None = None) -> str:
    """A new token's secret (shown once); ValueError for a scope and benchmarks that do not
    go together."""
    return repo.create(session, name, scope, benchmarks)


def revoke(session: Session, name: str) -> int:
    return repo.revoke(session, name)


def list_all(session: Session) -> list[ApiToken]:
    return repo.list_tokens(session)


def any_ever(session: Session) -> bool:
    return repo.any_ever(session)


def find(session: Session, token: str) -> ApiToken | None:
    """The active token with this secret, or None."""
    return repo.lookup(session, token)
