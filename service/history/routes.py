"""A series' history: GET /api/v1/changepoints and GET /api/v1/noise."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..api.deps import ReadAccess, SessionDep, errors
from ..gate import noisecards
from . import reads as history
from .schemas import ChangePointsOut, NoiseOut

router = APIRouter(prefix="/api/v1", tags=["history"], dependencies=[ReadAccess])
Name = Annotated[str, Query(min_length=1, max_length=200)]
OptName = Annotated[str | None, Query(min_length=1, max_length=200)]


@router.get("/changepoints", response_model=ChangePointsOut, responses=errors(401, 404, 422, 503))
def get_changepoints(benchmark: Name, session: SessionDep, metric: Name = "tok_s",
                     branch: OptName = None):
    """Change points of each series of one branch's history (default: the default branch)."""
    return history.changepoints(session, benchmark, metric, branch)


@router.get("/noise", response_model=NoiseOut, responses=errors(401, 404, 422, 503))
def get_noise(benchmark: Name, session: SessionDep, metric: Name = "tok_s", branch: OptName = None,
              baseline: OptName = None):
    """Run-to-run and trial spread per series, of one branch's history or a baseline's runs; on
    the default branch, each series' noise card too."""
    return noisecards.noise(session, benchmark, metric, branch, baseline)
