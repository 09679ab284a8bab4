"""Runs and their traces."""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from ... import tracestore
from ...errors import Invalid, from_validation
from ...jobs import tasks
from ...schemas import RunBatchCreated, RunBatchIn, RunCreated, RunIn, RunList, RunOut, TraceOut
from ...usecases import ingest, runs, traces
from ..deps import ERRORS, db, read_capped, require_read, require_write

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
    **ERRORS}, dependencies=[Depends(require_write)],
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/RunIn"}}}}})
async def create_run(request: Request):
    """Store a run record (spec/api.md). Nothing is stored from a rejected request."""
    s = request.app.state.settings
    run = _parse(RunIn, await read_capped(request, s.max_body_bytes, "run record"))
    run_id, created = await run_in_threadpool(ingest.store_run, request.app.state.sessions, run)
    if created:
        await run_in_threadpool(_after_ingest, request, [run], [run_id])
    return JSONResponse({"id": run_id}, status_code=201 if created else 200)


@router.post("/runs/batch", status_code=201, response_model=RunBatchCreated,
             responses=ERRORS, dependencies=[Depends(require_write)],
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/RunBatchIn"}}}}})
async def create_runs(request: Request):
    """Store many run records at once: all or nothing, one transaction; `422` names the record
    index and field. A record already stored (same idempotency key and body) gives its id."""
    s = request.app.state.settings
    batch = _parse(RunBatchIn, await read_capped(request, s.max_batch_bytes, "run batch"))
    ids, created = await run_in_threadpool(ingest.store_runs, request.app.state.sessions,
                                           batch.runs)
    if created:
        await run_in_threadpool(_after_ingest, request, batch.runs, ids)
    return JSONResponse({"ids": ids}, status_code=201 if created else 200)


def _after_ingest(request: Request, records: list[RunIn], ids: list[int]) -> None:
    """Queue the durable jobs new runs call for: one alert evaluation per benchmark of
    default-branch runs (coalesced), a PR comment per PR run when the bot is configured."""
    queue, s = request.app.state.queue, request.app.state.settings
    benches: dict[str, list[int]] = {}
    for rid, run in zip(ids, records):
        if run.pr is None:
            benches.setdefault(run.benchmark, []).append(rid)
    try:
        tasks.enqueue_evaluation(queue, benches)
        if s.github_token and s.bot_baseline:
            for rid, run in zip(ids, records):
                if run.repository and run.pr:
                    tasks.enqueue_pr_comment(queue, rid)
    except Exception:  # noqa: BLE001 - the runs are stored; the next evaluation covers them
        log.exception("queueing the jobs after an ingest failed")


@router.get("/runs", response_model=RunList, dependencies=[Depends(require_read)], responses=ERRORS)
def list_runs(session: Session = Depends(db), benchmark: Str200 = None, label: Str200 = None,
              branch: Str200 = None, commit: Str200 = None, gpu: Str200 = None,
              repository: Str200 = None, pr: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
              since: datetime | None = None, until: datetime | None = None,
              experiment: Str200 = None, bisect: Str200 = None,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100,
              offset: Annotated[int, Query(ge=0, le=10**9)] = 0):
    """Runs, newest first; `count` is the number of matching runs."""
    return runs.page(session, benchmark, label, branch, commit, gpu, limit=limit, offset=offset,
                     since=since, until=until, repository=repository, pr=pr, experiment=experiment,
                     bisect=bisect)


@router.get("/runs/{run_id}", response_model=RunOut, dependencies=[Depends(require_read)],
            responses=ERRORS)
def get_run(run_id: Id, session: Session = Depends(db)):
    return runs.get(session, run_id)


@router.delete("/runs/{run_id}", dependencies=[Depends(require_write)], responses=ERRORS)
def delete_run(run_id: Id, request: Request, force: bool = False):
    """Remove a run with its samples and traces; a run a baseline holds is 409 unless forced."""
    return runs.delete(request.app.state.sessions, request.app.state.settings.data_dir, run_id,
                       force)


@router.post("/runs/{run_id}/traces", status_code=202, response_model=TraceOut,
             dependencies=[Depends(require_write)], responses={
                 200: {"model": TraceOut, "description": "the same file again: the first upload"},
                 **ERRORS},
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}})
async def upload_trace(run_id: Id, request: Request,
                       filename: Annotated[str | None, Query(max_length=1000)] = None,
                       set_size: Annotated[int, Query(ge=1, le=1024)] = 1):
    """Stream a trace file to content-addressed storage and attach it: `202` with `state`
    `pending`; a worker analyzes it (a durable job) and the trace becomes `done` (its summary)
    or `failed` (`error`). What is not a trace at all (size, magic bytes) is refused here.
    `set_size`: the number of files in the run's trace set (its ranks); once that many are
    analyzed, the run's summary covers them together. The same file again is the first
    upload (200)."""
    s = request.app.state.settings
    name = tracestore.check_filename(filename)
    await run_in_threadpool(traces.check_run, request.app.state.sessions, run_id)
    tmp, sha, size = await tracestore.receive(request, s.data_dir, s.max_trace_bytes)
    out, created = await run_in_threadpool(traces.accept, request.app.state.sessions, s.data_dir,
                                           run_id, tmp, name, sha, size, set_size)
    if out["state"] == "pending":  # (again, for a repeated upload whose job was lost: coalesced)
        await run_in_threadpool(tasks.enqueue_trace, request.app.state.queue, out["id"])
    return JSONResponse(out, status_code=202 if created else 200)


@router.get("/traces/{trace_id}", dependencies=[Depends(require_read)], responses={
    200: {"content": {"application/octet-stream": {}}}, **ERRORS})
def download_trace(trace_id: Id, request: Request, session: Session = Depends(db)):
    path, filename = traces.download_path(session, request.app.state.settings.data_dir, trace_id)
    return FileResponse(path, filename=filename, media_type="application/octet-stream")


@router.get("/traces/{trace_id}/timeline", dependencies=[Depends(require_read)], responses=ERRORS)
async def trace_timeline(trace_id: Id, request: Request,
                         steps: Annotated[int, Query(ge=1, le=50)] = 3):
    """Per-stream op intervals of a few decode steps (us from the first step's start)."""
    return await run_in_threadpool(traces.timeline, request.app.state.sessions,
                                   request.app.state.settings.data_dir, trace_id, steps)
