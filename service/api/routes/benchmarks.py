"""Benchmarks: the list, and each one's default branch."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from ...history import reads as history
from ...schemas import BenchmarkList, BenchmarkPatch, BenchmarkSummary
from ...usecases import overview
from ..deps import (
    AdminAccess,
    ReadAccess,
    SessionDep,
    errors,
)

router = APIRouter(prefix="/api/v1", tags=["benchmarks"])
Name = Annotated[str, Path(min_length=1, max_length=200)]


@router.get("/benchmarks", response_model=BenchmarkList, dependencies=[ReadAccess],
            responses=errors(401, 422))
def benchmarks(session: SessionDep):
    rows = overview.benchmarks(session)
    return {"data": rows, "count": len(rows)}


@router.patch("/benchmarks/{name}", response_model=BenchmarkSummary,
              dependencies=[AdminAccess], responses=errors(400, 401, 403, 404, 413, 415, 422))
def patch_benchmark(name: Name, body: BenchmarkPatch, session: SessionDep):
    """Set the branch whose runs make the benchmark's history (default `main`) and the command
    its alerts' `perfwarden bisect` line runs (`bisect_command`)."""
    history.patch_benchmark(session, name, body.default_branch, body.bisect_command)
    return next(b for b in overview.benchmarks(session) if b.name == name)
