"""Reading runs: one, a filtered page, and what the dashboard's run page shows."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from collectors.traces.summary import valid as valid_summary

from ..baselines import queries as baselines_repo
from ..db import Session, SessionFactory, transaction
from ..errors import Conflict, DomainError
from ..format import series_short
from ..repositories import series as series_repo
from ..runs import queries as runs_repo
from ..sandbox import Sandbox
from ..traces import analysis, storage


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
    """The run with its series name, its traces as sets (trace_sets) and the per-stream
    timelines of the first file of each set (each parsed in the sandbox, kept once drawn)."""
    run = get(session, run_id)
    sets = trace_sets(run)
    timelines = []
    for ts in sets[:TIMELINE_SETS]:
        t = ts["traces"][0]
        if t["state"] != "done":
            continue
        try:
            data = analysis.timeline_of(data_dir, t["sha256"], t["filename"], steps, sandbox)
        except DomainError as e:
            timelines.append({"trace": t, "set": ts["name"], "error": e.message})
            continue
        timelines.append({"trace": t, "set": ts["name"], "data": data} if data["ops"] else
                         {"trace": t, "set": ts["name"], "error": "no decode steps in this trace"})
    ser = series_repo.series_rows(session, {run["series_id"]})[run["series_id"]]
    return {"run": run, "timelines": timelines, "trace_sets": sets,
            "series_name": series_short(ser.config, ser.gpu, ser.gpu_count)}


TIMELINE_SETS = 4  # trace sets of a run whose timelines the run page draws


def trace_sets(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's traces as their stored groups (spec/api.md, Engine traces at ingest), the run's
    own (group 0) first: each with its phase, its files, its state (`done` once every file is
    and the set's summary is recorded, `pending` while a file or a rank is still to come,
    `failed` where a file failed) and its summary as stored: the run's `trace_summary` for
    group 0, the group's `group_summary` for the others. Nothing is analyzed here."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for t in run["traces"]:
        groups.setdefault(t["trace_group"], []).append(t)
    out = []
    for g in sorted(groups):
        files = groups[g]
        states = [t["state"] for t in files]
        stored = (run.get("trace_summary") if g == 0 else files[0]["group_summary"]) or None
        summary, notes = valid_summary(stored)  # what of it a page may show, and what not
        state = "failed" if "failed" in states else (
            "pending" if "pending" in states or stored is None else "done")
        error = next((t["error"] for t in files if t["error"]), None)
        phase = next((t["phase"] for t in files if t["phase"]), "")
        out.append({"name": (f"{phase} " if phase else "") + files[0]["filename"]
                    + (f" (+{len(files) - 1} ranks)" if len(files) > 1 else ""),
                    "group": g, "phase": phase, "traces": files, "state": state,
                    "error": error, "summary": summary if state == "done" else None,
                    "notes": notes if state == "done" else []})
    return out


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
        baselines_repo.drop_run(holding, run_id)
        shas = {t.sha256 for t in runs_repo.traces_of(session, [run_id])}
        runs_repo.delete_run(session, run_id)
    removed = 0
    with transaction(sessions) as session:
        for sha in shas:
            if not runs_repo.trace_with_sha(session, sha):
                storage.remove_trace(data_dir, sha)
                removed += 1
    return {"id": run_id, "deleted": True, "trace_files_removed": removed,
            "left_baselines": [b.name for b in holding]}


def any_stored(sessions: SessionFactory) -> bool:
    """Whether the database holds any run (the data loader fills only an empty one)."""
    with transaction(sessions) as session:
        return runs_repo.any_run(session)


def trace_states(session: Session, run_ids: list[int]
                 ) -> dict[int, tuple[dict[str, Any] | None, str, str | None]]:
    """Per run that holds traces, its own trace set (group 0) as the run page shows it
    (trace_sets): the set's summary, its analysis state and the first error."""
    out = {}
    for rid in sorted({t.run_id for t in runs_repo.traces_of(session, run_ids)}):
        own = next((ts for ts in trace_sets(get(session, rid)) if ts["group"] == 0), None)
        if own is not None:  # a run holding only other groups has no trace of its own
            out[rid] = (own["summary"], own["state"], own["error"])
    return out
