"""The gate, the compare view's data, change points, noise and the benchmark list."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ...errors import ApiError
from ...models import Benchmark, Run
from ...repositories.runs import utc
from ...schemas import GateIn, GateOut
from ...stats.compare import compare
from ...stats.gate import run_gate
from ...stats.history import changepoints, noise
from ..deps import db, require_read
from .runs import ERRORS

router = APIRouter(prefix="/api/v1", tags=["gate"], dependencies=[Depends(require_read)])
Name = Annotated[str, Query(min_length=1, max_length=200)]


@router.post("/gate", response_model=GateOut, responses=ERRORS)
def gate(body: GateIn, request: Request, session: Session = Depends(db)):
    """Candidate runs against a baseline, series by series (spec/api.md, "Gate")."""
    return run_gate(session, body, request.app.state.settings.gate_alpha)


def parse_run_ids(text: str) -> list[int]:
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ApiError(422, "validation_error", "run_ids: expected comma-separated run ids",
                       "run_ids") from None
    if not ids or len(ids) > 1000 or any(i < 1 or i > 2**31 for i in ids):
        raise ApiError(422, "validation_error", "run_ids: expected 1 to 1000 run ids", "run_ids")
    return ids


@router.get("/compare", responses=ERRORS)
def compare_view(request: Request, benchmark: Name, baseline: Name,
                 run_ids: Annotated[str, Query(min_length=1, max_length=20000)],
                 session: Session = Depends(db)):
    """The gate's answer with sample distributions, trace diff, determinism and run details."""
    req = GateIn(benchmark=benchmark, baseline=baseline, run_ids=parse_run_ids(run_ids))
    return compare(session, req, request.app.state.settings.gate_alpha)


@router.get("/changepoints", responses=ERRORS)
def get_changepoints(benchmark: Name, metric: Annotated[str, Query(max_length=200)] = "tok_s",
                     session: Session = Depends(db)):
    return {"benchmark": benchmark, "metric": metric,
            "series": changepoints(session, benchmark, metric)}


@router.get("/noise", responses=ERRORS)
def get_noise(benchmark: Name, metric: Annotated[str, Query(max_length=200)] = "tok_s",
              session: Session = Depends(db)):
    return {"benchmark": benchmark, "metric": metric, "series": noise(session, benchmark, metric)}


@router.get("/benchmarks", responses=ERRORS)
def benchmarks(session: Session = Depends(db)):
    rows = session.execute(select(Benchmark.name, func.count(Run.id), func.max(Run.started_at))
                           .join(Run, Run.benchmark_id == Benchmark.id, isouter=True)
                           .group_by(Benchmark.id).order_by(func.max(Run.started_at).desc())).all()
    return {"data": [{"name": n, "runs": c, "latest": utc(t)} for n, c, t in rows],
            "count": len(rows)}
