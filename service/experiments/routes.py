"""GET /api/v1/experiments/{id}: an interleaved experiment and its blocked verdict."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from ..api.deps import ReadAccess, SessionDep, SettingsDep, errors
from . import blocks as experiments
from .schemas import ExperimentOut

router = APIRouter(prefix="/api/v1", tags=["experiments"], dependencies=[ReadAccess])


@router.get("/experiments/{exp_id}", response_model=ExperimentOut, responses=errors(401, 404, 422))
def get_experiment(exp_id: Annotated[str, Path(min_length=1, max_length=200)], session: SessionDep,
                   settings: SettingsDep):
    """An interleaved experiment: its runs by arm and block, and its blocked verdict."""
    return experiments.show(session, exp_id, settings.gate_alpha)
