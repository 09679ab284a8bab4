"""GET /api/v1/attribution: which config key explains a metric's spread."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..api.deps import ReadAccess, SessionDep, errors
from . import fit as attribution
from .schemas import AttributionOut

router = APIRouter(prefix="/api/v1", tags=["attribution"], dependencies=[ReadAccess])


@router.get("/attribution", response_model=AttributionOut, responses=errors(401, 404, 422, 503))
def get_attribution(benchmark: Annotated[str, Query(min_length=1, max_length=200)],
                    session: SessionDep,
                    metric: Annotated[str, Query(min_length=1, max_length=200)] = "tok_s",
                    label: Annotated[list[str] | None, Query(max_length=100)] = None,
                    branch: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
                    gpu: Annotated[str | None, Query(min_length=1, max_length=200)] = None):
    """Which config key explains the run means and trial spread of `metric`, or (metric
    `determinism`) the non-identical repeats, over the runs of these labels in `branch`'s history
    (the default branch's when none is named), of one GPU model and count (`gpu`)."""
    return attribution.attribution(session, benchmark, metric, label, branch, gpu)
