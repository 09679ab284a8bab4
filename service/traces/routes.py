"""Traces of a run: upload (202, analyzed by a durable job), download, timeline."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse

from ..api.deps import IngestAccess, ReadAccess, SessionDep, SessionsDep, SettingsDep, errors, principal
from ..jobs import tasks
from ..sandbox import Sandbox
from . import attach, intake, uploads
from .schemas import StagedTraceOut, TimelineOut, TraceOut

router = APIRouter(prefix="/api/v1", tags=["traces"])
Id = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.post("/runs/{run_id}/traces", status_code=202, response_model=TraceOut,
             dependencies=[IngestAccess], responses={
                 200: {"model": TraceOut, "description": "the same file again: the first upload"},
                 **errors(400, 401, 403, 404, 413, 415, 422, 409, 507)},
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}})
async def upload_trace(run_id: Id, request: Request, response: Response, sessions: SessionsDep,
                       filename: Annotated[str | None, Query(max_length=1000)] = None,
                       set_size: Annotated[int, Query(ge=1, le=1024)] = 1):
    """Stream a trace file to content-addressed storage and attach it: `202` with `state`
    `pending`; a worker analyzes it (a durable job) and the trace becomes `done` (its summary)
    or `failed` (`error`). What is not a trace at all (size, magic bytes) is refused here.
    `set_size`: the number of files in the run's trace set (its ranks); once that many are
    analyzed, the run's summary covers them together. The same file again is the first
    upload (200)."""
    s = request.app.state.settings
    name = intake.check_filename(filename)
    bench = await run_in_threadpool(attach.check_run, sessions, run_id)
    principal(request).check_benchmarks({bench})
    tmp, sha, size = await intake.receive(request, s.data_dir, s.max_trace_bytes,
                                              request.app.state.upload_pace)
    out, created = await run_in_threadpool(attach.accept, sessions, s.data_dir,
                                           run_id, tmp, name, sha, size, set_size)
    if out["state"] == "pending":  # (again, for a repeated upload whose job was lost: coalesced)
        await run_in_threadpool(tasks.enqueue_trace, request.app.state.queue, out["id"])
    response.status_code = 202 if created else 200
    return out


@router.post("/traces/stage", status_code=201, response_model=StagedTraceOut,
             dependencies=[IngestAccess], responses={
                 200: {"model": StagedTraceOut, "description": "the same file is staged already"},
                 **errors(400, 401, 403, 404, 413, 415, 422, 507)},
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}})
async def stage_trace(request: Request, response: Response,
                      filename: Annotated[str | None, Query(max_length=1000)] = None):
    """Stream a trace file to the server before its run exists; a run batch then names it by
    its `sha256` (`traces` of `POST /api/v1/runs/batch`) and the runs and their traces are
    stored in one transaction. What is not a trace at all is refused here (`413`/`422`,
    nothing kept)."""
    s = request.app.state.settings
    name = intake.check_filename(filename)
    tmp, sha, size = await intake.receive(request, s.data_dir, s.max_trace_bytes,
                                              request.app.state.upload_pace)
    who = getattr(request.state, "principal", None)
    out, created = await run_in_threadpool(
        uploads.stage, s.data_dir, tmp, name, sha, size, getattr(who, "name", None) or "anonymous",
        (s.max_staged_bytes, s.max_staged_bytes_per_token))
    response.status_code = 201 if created else 200
    return out


@router.get("/traces/{trace_id}", dependencies=[ReadAccess], responses={
    200: {"content": {"application/octet-stream": {}}}, **errors(401, 404, 422)})
def download_trace(trace_id: Id, session: SessionDep, settings: SettingsDep):
    path, filename = attach.download_path(session, settings.data_dir, trace_id)
    return FileResponse(path, filename=filename, media_type="application/octet-stream")


@router.get("/traces/{trace_id}/timeline", response_model=TimelineOut, dependencies=[ReadAccess],
            responses=errors(401, 404, 422, 503))
async def trace_timeline(trace_id: Id, sessions: SessionsDep, s: SettingsDep,
                         steps: Annotated[int, Query(ge=1, le=50)] = 3):
    """Per-stream op intervals of a few decode steps (us from the first step's start), parsed
    in the analysis sandbox; a trace whose analysis failed is 422 with its reason."""
    return await run_in_threadpool(attach.timeline, sessions, s.data_dir,
                                   trace_id, steps, Sandbox.of(s))
