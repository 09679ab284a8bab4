"""GET /api/v1/explain: the key that explains a metric over a factorial matrix, the kernels that
tell its levels apart, the deterministic-mode runs, and the decision sentence."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..api.deps import ReadAccess, SessionDep, errors
from . import report as explain
from .schemas import ExplainOut

router = APIRouter(prefix="/api/v1", tags=["explain"], dependencies=[ReadAccess])


@router.get("/explain", response_model=ExplainOut, responses=errors(401, 404, 422, 503))
def get_explain(benchmark: Annotated[str, Query(min_length=1, max_length=200)],
                session: SessionDep,
                metric: Annotated[str, Query(min_length=1, max_length=200)] = "determinism",
                label: Annotated[list[str] | None, Query(max_length=100)] = None,
                branch: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
                gpu: Annotated[str | None, Query(min_length=1, max_length=200)] = None):
    """Explain `metric` (default `determinism`) over the runs of these labels in `branch`'s
    history, of one GPU model and count."""
    return explain.explain(session, benchmark, metric, label, branch, gpu)
