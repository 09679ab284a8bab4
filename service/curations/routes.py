"""Curation of a benchmark's series: expected change points and muted metrics (audited)."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from ..api.deps import Principal, ReadAccess, SessionDep, errors, require_write
from . import marks as curations
from .schemas import CurationIn, CurationList, CurationOut

router = APIRouter(prefix="/api/v1", tags=["curations"])
Name = Annotated[str, Path(min_length=1, max_length=200)]
Id = Annotated[int, Path(ge=1, le=2**31 - 1)]
Writer = Annotated[Principal, Depends(require_write)]


@router.post("/benchmarks/{benchmark}/curations", status_code=201, response_model=CurationOut,
             responses=errors(400, 401, 403, 404, 413, 415, 422))
def create_curation(benchmark: Name, body: CurationIn, session: SessionDep, who: Writer):
    """Mark an expected change point of a series' metric (`kind: expected`, `run_id`: the new
    level's first run) or mute the metric of the series (`kind: mute`, `expires_at`); `note`
    says why. Who and when are stored with it."""
    return curations.create(session, benchmark, body, who.name)


@router.get("/benchmarks/{benchmark}/curations", response_model=CurationList,
            dependencies=[ReadAccess], responses=errors(401, 404, 422))
def list_curations(benchmark: Name, session: SessionDep,
                   all: Annotated[bool, Query(description="withdrawn and expired ones too")]
                   = False):
    """The benchmark's curations in force, newest first (with `all`, the whole audit)."""
    return curations.list_for(session, benchmark, all)


@router.delete("/curations/{curation_id}", response_model=CurationOut,
               responses=errors(401, 403, 404, 409, 422))
def withdraw_curation(curation_id: Id, session: SessionDep, who: Writer):
    """Withdraw a curation: it stays in the audit with who withdrew it and when."""
    return curations.withdraw(session, curation_id, who.name)
