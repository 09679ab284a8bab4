"""Named baselines."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from ..api.deps import (
    AdminAccess,
    ReadAccess,
    SessionDep,
    errors,
)
from . import named
from .schemas import BaselineIn, BaselineList, BaselineMove, BaselineOut

router = APIRouter(prefix="/api/v1", tags=["baselines"])
Name = Annotated[str, Path(min_length=1, max_length=200)]


@router.post("/baselines", status_code=201, response_model=BaselineOut,
             dependencies=[AdminAccess], responses=errors(400, 401, 403, 404, 413, 415, 422, 409, 507))
def create_baseline(body: BaselineIn, session: SessionDep):
    return named.create(session, body.name, body.benchmark, body.run_ids)


@router.put("/baselines/{benchmark}/{name}", response_model=BaselineOut,
            dependencies=[AdminAccess], responses=errors(400, 401, 403, 404, 413, 415, 422, 507))
def move_baseline(benchmark: Name, name: Name, body: BaselineMove, session: SessionDep):
    """Point the baseline at another run set; the old one stays in its history."""
    return named.move(session, benchmark, name, body.run_ids)


@router.get("/baselines/{benchmark}/{name}", response_model=BaselineOut,
            dependencies=[ReadAccess], responses=errors(401, 404, 422))
def get_baseline(benchmark: Name, name: Name, session: SessionDep):
    return named.show(session, benchmark, name)


@router.delete("/baselines/{benchmark}/{name}", status_code=204,
               dependencies=[AdminAccess], responses=errors(401, 403, 404, 422))
def delete_baseline(benchmark: Name, name: Name, session: SessionDep):
    named.delete(session, benchmark, name)
    return Response(status_code=204)


@router.get("/baselines", response_model=BaselineList, dependencies=[ReadAccess],
            responses=errors(401, 404, 422))
def list_baselines(session: SessionDep,
                   benchmark: Annotated[str | None, Query(max_length=200)] = None):
    rows = named.list_all(session, benchmark)
    return {"data": rows, "count": len(rows)}
