"""GET /api/v1/health: the database answers and is migrated to this version's head."""
from __future__ import annotations

from fastapi import APIRouter

from ... import migrate
from ...errors import Unavailable
from ...schemas import HealthOut
from ...version import VERSION
from ..deps import SessionDep, errors

router = APIRouter(tags=["meta"])


@router.get("/api/v1/health", response_model=HealthOut, responses=errors(503))
def health(session: SessionDep) -> dict:
    """200 with the revision when migrated; 503 in the one error shape otherwise."""
    rev = migrate.revision_of(session.connection())
    want = migrate.head()
    if rev != want:
        raise Unavailable(f"the database is at revision {rev or 'none'} and this version needs {want}: "
                          "run perfwarden db upgrade", code="unmigrated")
    return {"status": "ok", "version": VERSION, "database": {"revision": rev, "head": want}}
