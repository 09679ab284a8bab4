"""POST /api/v1/gate and GET /api/v1/compare: candidate runs judged against a baseline."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..api.deps import ReadAccess, SessionDep, SettingsDep, errors
from ..schemas import parse_run_ids, parse_thresholds, parse_vary
from . import verdicts
from .schemas import CompareOut, GateIn, GateOut

router = APIRouter(prefix="/api/v1", tags=["gate"], dependencies=[ReadAccess])
Name = Annotated[str, Query(min_length=1, max_length=200)]
Csv = Annotated[str | None, Query(max_length=2000)]


@router.post("/gate", response_model=GateOut, responses=errors(400, 401, 404, 413, 415, 422))
def gate(body: GateIn, session: SessionDep, settings: SettingsDep):
    """Candidate runs against a baseline, series by series (spec/api.md, "Gate")."""
    return verdicts.gate(session, body, settings.gate_alpha)


@router.get("/compare", response_model=CompareOut, responses=errors(401, 404, 422))
def compare_view(benchmark: Name, baseline: Name,
                 run_ids: Annotated[str, Query(min_length=1, max_length=20000)],
                 session: SessionDep, settings: SettingsDep, vary: Csv = None, metrics: Csv = None,
                 thresholds: Csv = None):
    """The gate's answer with sample distributions, trace diff, determinism and run details;
    `metrics=a,b` and `thresholds=METRIC=PCT,...` as the gate's `metrics` and `thresholds`."""
    req = GateIn(benchmark=benchmark, baseline=baseline, run_ids=parse_run_ids(run_ids),
                 vary=parse_vary(vary), metrics=parse_vary(metrics),
                 thresholds=parse_thresholds(thresholds))
    return verdicts.compare(session, req, settings.gate_alpha)
