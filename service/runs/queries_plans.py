"""The interleaved experiments' stored plans (the looks and the question each was planned with)."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..experiments.tables import ExperimentPlan


def plans(session: Session, experiment_ids: set[str]) -> dict[str, ExperimentPlan]:
    if not experiment_ids:
        return {}
    return {p.experiment_id: p for p in session.scalars(
        select(ExperimentPlan).where(ExperimentPlan.experiment_id.in_(sorted(experiment_ids))))}
