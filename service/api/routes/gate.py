"""The gate, the compare view's data, experiments, change points and noise."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from sqlalchemy.orm import Session

from ...schemas import (
    AttributionOut,
    ChangePointsOut,
    CompareOut,
    ExperimentOut,
    GateIn,
    GateOut,
    NoiseOut,
    parse_run_ids,
    parse_thresholds,
    parse_vary,
)
from ...usecases import attribution, experiments, history, verdicts
from ..deps import ERRORS, db, require_read

router = APIRouter(prefix="/api/v1", tags=["gate"], dependencies=[Depends(require_read)])
Name = Annotated[str, Query(min_length=1, max_length=200)]
OptName = Annotated[str | None, Query(min_length=1, max_length=200)]
Metric = Annotated[str, Query(min_length=1, max_length=200)]


@router.post("/gate", response_model=GateOut, responses=ERRORS)
def gate(body: GateIn, request: Request, session: Session = Depends(db)):
    """Candidate runs against a baseline, series by series (spec/api.md, "Gate")."""
    return verdicts.gate(session, body, request.app.state.settings.gate_alpha)


@router.get("/compare", response_model=CompareOut, responses=ERRORS)
def compare_view(request: Request, benchmark: Name, baseline: Name,
                 run_ids: Annotated[str, Query(min_length=1, max_length=20000)],
                 vary: Annotated[str | None, Query(max_length=2000)] = None,
                 metrics: Annotated[str | None, Query(max_length=2000)] = None,
                 thresholds: Annotated[str | None, Query(max_length=2000)] = None,
                 session: Session = Depends(db)):
    """The gate's answer with sample distributions, trace diff, determinism and run details;
    `metrics=a,b` and `thresholds=METRIC=PCT,...` as the gate's `metrics` and `thresholds`."""
    req = GateIn(benchmark=benchmark, baseline=baseline, run_ids=parse_run_ids(run_ids),
                 vary=parse_vary(vary), metrics=parse_vary(metrics),
                 thresholds=parse_thresholds(thresholds))
    return verdicts.compare(session, req, request.app.state.settings.gate_alpha)


@router.get("/experiments/{exp_id}", response_model=ExperimentOut, responses=ERRORS)
def get_experiment(request: Request, exp_id: Annotated[str, Path(min_length=1, max_length=200)],
                   session: Session = Depends(db)):
    """An interleaved experiment: its runs by arm and block, and its blocked verdict."""
    return experiments.show(session, exp_id, request.app.state.settings.gate_alpha)


@router.get("/attribution", response_model=AttributionOut, responses=ERRORS)
def get_attribution(benchmark: Name, metric: Metric = "tok_s",
                    label: Annotated[list[str] | None, Query(max_length=100)] = None,
                    branch: OptName = None, session: Session = Depends(db)):
    """Which config key explains the run means and trial spread of `metric`, or (metric
    `determinism`) the non-identical repeats, over the runs of these labels."""
    return attribution.attribution(session, benchmark, metric, label, branch)


@router.get("/changepoints", response_model=ChangePointsOut, responses=ERRORS)
def get_changepoints(benchmark: Name, metric: Metric = "tok_s", branch: OptName = None,
                     session: Session = Depends(db)):
    """Change points of each series of one branch's history (default: the default branch)."""
    return history.changepoints(session, benchmark, metric, branch)


@router.get("/noise", response_model=NoiseOut, responses=ERRORS)
def get_noise(benchmark: Name, metric: Metric = "tok_s", branch: OptName = None,
              baseline: OptName = None, session: Session = Depends(db)):
    """Run-to-run and trial spread per series, of one branch's history or a baseline's runs."""
    return history.noise(session, benchmark, metric, branch, baseline)
