"""Named baselines."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from ...repositories import baselines as repo
from ...schemas import BaselineIn, BaselineList, BaselineMove, BaselineOut
from ..deps import db, require_read, require_write
from .runs import ERRORS

router = APIRouter(prefix="/api/v1", tags=["baselines"])
Name = Annotated[str, Path(min_length=1, max_length=200)]


@router.post("/baselines", status_code=201, response_model=BaselineOut,
             dependencies=[Depends(require_write)], responses=ERRORS)
def create_baseline(body: BaselineIn, session: Session = Depends(db)):
    row = repo.create(session, body.name, body.benchmark, body.run_ids)
    session.flush()
    return JSONResponse(repo.out(session, row), status_code=201)


@router.put("/baselines/{benchmark}/{name}", response_model=BaselineOut,
            dependencies=[Depends(require_write)], responses=ERRORS)
def move_baseline(benchmark: Name, name: Name, body: BaselineMove, session: Session = Depends(db)):
    """Point the baseline at another run set; the old one stays in its history."""
    return repo.out(session, repo.move(session, benchmark, name, body.run_ids))


@router.get("/baselines", response_model=BaselineList, dependencies=[Depends(require_read)],
            responses=ERRORS)
def list_baselines(session: Session = Depends(db),
                   benchmark: Annotated[str | None, Query(max_length=200)] = None):
    rows = repo.list_all(session, benchmark)
    return {"data": [repo.out(session, r) for r in rows], "count": len(rows)}
