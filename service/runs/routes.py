"""Runs: POST /api/v1/runs (and /batch), GET, DELETE."""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, TypeVar

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ValidationError

from ..api.deps import (
    AdminAccess,
    IngestAccess,
    ReadAccess,
    SessionDep,
    SessionsDep,
    SettingsDep,
    errors,
    principal,
    read_capped,
)
from ..errors import Invalid, from_validation
from ..jobs import tasks
from ..traces import uploads
from ..usecases import runs as run_reads
from . import ingest
from .schemas import RunBatchCreated, RunBatchIn, RunCreated, RunDeleted, RunIn, RunList, RunOut

router = APIRouter(prefix="/api/v1", tags=["runs"])
log = logging.getLogger("perfwarden.ingest")
Str200 = Annotated[str | None, Query(max_length=200)]
Id = Annotated[int, Path(ge=1, le=2**31 - 1)]


M = TypeVar("M", bound=BaseModel)


def _parse(model: type[M], body: bytes) -> M:
    """A JSON body as `model`; one Invalid naming the first bad field (or the JSON error)."""
    try:
        return model.model_validate_json(body)
    except ValidationError as e:
        if any(err.get("type") == "json_invalid" for err in e.errors()):
            raise Invalid(f"body: not valid JSON ({e.errors()[0]['msg']})", "body",
                          code="invalid_json") from None
        raise from_validation(e) from None


@router.post("/runs", status_code=201, response_model=RunCreated, responses={
    200: {"model": RunCreated, "description": "same idempotency key and body: the first run"},
    **errors(400, 401, 403, 404, 413, 415, 422, 409, 507)}, dependencies=[IngestAccess],
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/RunIn"}}}}})
async def create_run(request: Request, response: Response, sessions: SessionsDep):
    """Store a run record (spec/api.md). Nothing is stored from a rejected request."""
    s = request.app.state.settings
    run = _parse(RunIn, await read_capped(request, s.max_body_bytes, "run record"))
    principal(request).check_benchmarks({run.benchmark})
    run_id, created = await run_in_threadpool(ingest.store_run, sessions, run)
    if created:
        await run_in_threadpool(_after_ingest, request, [run], [run_id])
    response.status_code = 201 if created else 200
    return RunCreated(id=run_id)


@router.post("/runs/batch", status_code=201, response_model=RunBatchCreated,
             responses=errors(400, 401, 403, 404, 413, 415, 422, 409, 507), dependencies=[IngestAccess],
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/RunBatchIn"}}}}})
async def create_runs(request: Request, response: Response, sessions: SessionsDep):
    """Store many run records at once: all or nothing, one transaction; `422` names the record
    index and field. A record already stored (same idempotency key and body) gives its id.
    `traces` (one list per run) attaches files staged by `POST /api/v1/traces/stage` in the
    same transaction: the runs are never seen without them."""
    s = request.app.state.settings
    batch = _parse(RunBatchIn, await read_capped(request, s.max_batch_bytes, "run batch"))
    principal(request).check_benchmarks({r.benchmark for r in batch.runs})
    if batch.traces is None:
        ids, created = await run_in_threadpool(ingest.store_runs, sessions,
                                               batch.runs)
    else:
        ids, created, added = await run_in_threadpool(
            uploads.store_runs_with_traces, sessions, s.data_dir, batch.runs,
            batch.traces)
        for trace_id in added:
            await run_in_threadpool(tasks.enqueue_trace, request.app.state.queue, trace_id)
    if created:
        await run_in_threadpool(_after_ingest, request, batch.runs, ids)
    response.status_code = 201 if created else 200
    return RunBatchCreated(ids=ids)


def _after_ingest(request: Request, records: list[RunIn], ids: list[int]) -> None:
    """Queue the durable jobs new runs call for: one alert evaluation per benchmark of
    default-branch runs (coalesced), a PR comment per PR run when the bot is configured."""
    queue, s = request.app.state.queue, request.app.state.settings
    benches: dict[str, list[int]] = {}
    for rid, run in zip(ids, records):
        if run.pr is None:
            benches.setdefault(run.benchmark, []).append(rid)
    try:
        tasks.enqueue_evaluation(queue, benches)  # it queues the pages' summaries after it
        for name in {r.benchmark for r in records} - set(benches):  # PR runs only: no
            tasks.enqueue_summaries(queue, name, [])  # evaluation, but the summaries count them
        if s.github_token and s.bot_baseline:
            for rid, run in zip(ids, records):
                if run.repository and run.pr:
                    why = s.github_refusal(run.repository)
                    if why is not None:  # the run stays; only the bot's comment is refused
                        log.warning("no PR comment for run %s: %s", rid, why)
                        continue
                    tasks.enqueue_pr_comment(queue, rid)
    except Exception:  # noqa: BLE001 - the runs are stored; the next evaluation covers them
        log.exception("queueing the jobs after an ingest failed")


@router.get("/runs", response_model=RunList, dependencies=[ReadAccess], responses=errors(401, 404, 422))
def list_runs(session: SessionDep, benchmark: Str200 = None, label: Str200 = None,
              branch: Str200 = None, commit: Str200 = None, gpu: Str200 = None,
              repository: Str200 = None, pr: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
              since: datetime | None = None, until: datetime | None = None,
              experiment: Str200 = None, bisect: Str200 = None,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100,
              offset: Annotated[int, Query(ge=0, le=10**9)] = 0):
    """Runs, newest first; `count` is the number of matching runs."""
    return run_reads.page(session, benchmark, label, branch, commit, gpu, limit=limit, offset=offset,
                     since=since, until=until, repository=repository, pr=pr, experiment=experiment,
                     bisect=bisect)


@router.get("/runs/{run_id}", response_model=RunOut, dependencies=[ReadAccess],
            responses=errors(401, 404, 422))
def get_run(run_id: Id, session: SessionDep):
    return run_reads.get(session, run_id)


@router.delete("/runs/{run_id}", response_model=RunDeleted, dependencies=[AdminAccess],
               responses=errors(401, 403, 404, 409, 422, 507))
def delete_run(run_id: Id, sessions: SessionsDep, settings: SettingsDep, force: bool = False):
    """Remove a run with its samples and traces; a run a baseline holds is 409 unless forced."""
    return run_reads.delete(sessions, settings.data_dir, run_id, force)
