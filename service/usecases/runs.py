"""Reading runs: one, a filtered page, and what the dashboard's run page shows."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .. import tracestore
from ..db import Session, SessionFactory, transaction
from ..errors import Conflict, DomainError
from ..format import series_short
from ..repositories import runs as runs_repo
from ..repositories import series as series_repo
from ..sandbox import Sandbox


def get(session: Session, run_id: int) -> dict[str, Any]:
    return runs_repo.run_out(session, runs_repo.get_run(session, run_id))


def page(session: Session, benchmark: str | None = None, label: str | None = None,
         branch: str | None = None, commit: str | None = None, gpu: str | None = None,
         limit: int = 100, offset: int = 0, since: datetime | None = None,
         until: datetime | None = None, repository: str | None = None,
         pr: int | None = None, experiment: str | None = None, bisect: str | None = None
         ) -> dict[str, Any]:
    rows, count = runs_repo.list_runs(session, benchmark, label, branch, commit, gpu, limit=limit,
                                      offset=offset, since=since, until=until,
                                      repository=repository, pr=pr, experiment=experiment,
                                      bisect=bisect)
    return {"data": [runs_repo.run_out(session, r, with_samples=False) for r in rows],
            "count": count}


def run_view(session: Session, data_dir: Path, run_id: int, steps: int,
             sandbox: Sandbox | None = None) -> dict[str, Any]:
    """The run with its series name and the per-stream timelines of its first traces (each
    parsed in the sandbox)."""
    run = get(session, run_id)
    timelines = []
    for t in [t for t in run["traces"] if t["state"] == "done"][:2]:
        try:
            data = tracestore.timeline_of(data_dir, t["sha256"], t["filename"], steps, sandbox)
        except DomainError as e:
            timelines.append({"trace": t, "error": e.message})
            continue
        timelines.append({"trace": t, "data": data} if data["ops"] else
                         {"trace": t, "error": "no decode steps in this trace"})
    ser = series_repo.series_rows(session, {run["series_id"]})[run["series_id"]]
    return {"run": run, "timelines": timelines,
            "series_name": series_short(ser.config, ser.gpu, ser.gpu_count)}


def delete(sessions: SessionFactory, data_dir: Path, run_id: int, force: bool = False
           ) -> dict[str, Any]:
    """Remove a run with its samples and traces. A run a baseline holds is a Conflict unless
    forced (then it leaves those baselines). Trace files go once no trace row names them."""
    with transaction(sessions) as session:
        runs_repo.get_run(session, run_id)
        holding = runs_repo.baselines_holding(session, run_id)
        if holding and not force:
            raise Conflict(f"run {run_id} is in baseline(s) {', '.join(b.name for b in holding)}; "
                           "move them first or delete with ?force=true", "run_id")
        for b in holding:
            b.run_ids = [i for i in b.run_ids if i != run_id]
        shas = {t.sha256 for t in runs_repo.traces_of(session, [run_id])}
        runs_repo.delete_run(session, run_id)
    removed = 0
    with transaction(sessions) as session:
        for sha in shas:
            if not runs_repo.trace_with_sha(session, sha):
                tracestore.path_for(data_dir, sha).unlink(missing_ok=True)
                removed += 1
    return {"id": run_id, "deleted": True, "trace_files_removed": removed,
            "left_baselines": [b.name for b in holding]}


def any_stored(sessions: SessionFactory) -> bool:
    """Whether the database holds any run (the data loader fills only an empty one)."""
    with transaction(sessions) as session:
        return runs_repo.any_run(session)
