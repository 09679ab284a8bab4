"""Runs and their traces."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ... import tracestore
from ...db import transaction
from ...errors import ApiError, from_validation, not_found
from ...models import Run, TraceFile
from ...repositories import runs as repo
from ...schemas import ErrorOut, RunCreated, RunIn, RunList, RunOut, TraceOut
from ..deps import db, read_capped, require_read, require_write

router = APIRouter(prefix="/api/v1", tags=["runs"])
ERRORS = {code: {"model": ErrorOut} for code in (401, 403, 404, 409, 413, 422)}
Str200 = Annotated[str | None, Query(max_length=200)]
Id = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.post("/runs", status_code=201, response_model=RunCreated, responses={
    200: {"model": RunCreated, "description": "same idempotency key and body: the first run"},
    **ERRORS}, dependencies=[Depends(require_write)],
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/RunIn"}}}}})
async def create_run(request: Request, background: BackgroundTasks):
    """Store a run record (spec/api.md). Nothing is stored from a rejected request."""
    s = request.app.state.settings
    body = await read_capped(request, s.max_body_bytes, "run record")
    try:
        run = RunIn.model_validate_json(body)
    except ValidationError as e:
        if any(err.get("type") == "json_invalid" for err in e.errors()):
            raise ApiError(422, "invalid_json", f"body: not valid JSON ({e.errors()[0]['msg']})",
                           "body") from None
        raise from_validation(e) from None
    digest = repo.body_hash(run)

    def store():
        for attempt in range(3):
            try:
                with transaction(request.app.state.sessions) as session:
                    # first try without looking the key up: a reused key fails on its unique
                    # constraint and the retry looks it up (saves a round trip per new run)
                    return repo.create_run(session, run, digest, check_key=attempt > 0)
            except IntegrityError:  # a concurrent request stored the same key or series first
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    run_id, created = await run_in_threadpool(store)
    if created and run.repository and run.pr and request.app.state.on_run_created:
        background.add_task(request.app.state.on_run_created, run_id)
    return JSONResponse({"id": run_id}, status_code=201 if created else 200)


@router.get("/runs", response_model=RunList, dependencies=[Depends(require_read)], responses=ERRORS)
def list_runs(session: Session = Depends(db), benchmark: Str200 = None, label: Str200 = None,
              branch: Str200 = None, commit: Str200 = None, gpu: Str200 = None,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100,
              offset: Annotated[int, Query(ge=0, le=10**9)] = 0):
    rows, count = repo.list_runs(session, benchmark, label, branch, commit, gpu, limit=limit,
                                 offset=offset)
    return {"data": [repo.run_out(session, r, with_samples=False) for r in rows], "count": count}


@router.get("/runs/{run_id}", response_model=RunOut, dependencies=[Depends(require_read)],
            responses=ERRORS)
def get_run(run_id: Id, session: Session = Depends(db)):
    return repo.run_out(session, repo.get_run(session, run_id))


@router.post("/runs/{run_id}/traces", status_code=201, response_model=TraceOut,
             dependencies=[Depends(require_write)], responses=ERRORS,
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}})
async def upload_trace(run_id: Id, request: Request,
                       filename: Annotated[str | None, Query(max_length=1000)] = None):
    """Stream a trace file to content-addressed storage, analyze it, attach the summary."""
    s = request.app.state.settings
    name = tracestore.check_filename(filename)
    with transaction(request.app.state.sessions) as session:
        if session.get(Run, run_id) is None:
            raise not_found(f"run {run_id}")
    tmp, sha, size = await tracestore.receive(request, s.data_dir, s.max_trace_bytes)
    try:
        fmt, summary = await run_in_threadpool(tracestore.analyze_file, tmp, name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    final = tracestore.commit_file(tmp, s.data_dir, sha)

    def attach():
        with transaction(request.app.state.sessions) as session:
            run = session.get(Run, run_id)
            if run is None:
                raise not_found(f"run {run_id}")
            row = TraceFile(run_id=run_id, sha256=sha, filename=name, size_bytes=size, format=fmt,
                            summary=summary, created_at=datetime.now(timezone.utc))
            session.add(row)
            run.trace_summary = summary
            session.flush()
            return row.id

    try:
        trace_id = await run_in_threadpool(attach)
    except BaseException:
        with transaction(request.app.state.sessions) as session:
            if not session.scalars(select(TraceFile.id).where(TraceFile.sha256 == sha)).first():
                final.unlink(missing_ok=True)
        raise
    return JSONResponse({"id": trace_id, "run_id": run_id, "sha256": sha, "filename": name,
                         "size_bytes": size, "format": fmt, "summary": summary}, status_code=201)


@router.get("/traces/{trace_id}", dependencies=[Depends(require_read)], responses={
    200: {"content": {"application/octet-stream": {}}}, **ERRORS})
def download_trace(trace_id: Id, request: Request, session: Session = Depends(db)):
    row = session.get(TraceFile, trace_id)
    if row is None:
        raise not_found(f"trace {trace_id}")
    path = tracestore.path_for(request.app.state.settings.data_dir, row.sha256)
    if not path.exists():
        raise ApiError(404, "not_found", f"trace {trace_id}: file is missing from storage")
    return FileResponse(path, filename=row.filename, media_type="application/octet-stream")


@router.get("/traces/{trace_id}/timeline", dependencies=[Depends(require_read)], responses=ERRORS)
async def trace_timeline(trace_id: Id, request: Request,
                         steps: Annotated[int, Query(ge=1, le=50)] = 3):
    """Per-stream op intervals of a few decode steps (us from the first step's start)."""
    with transaction(request.app.state.sessions) as session:
        row = session.get(TraceFile, trace_id)
        if row is None:
            raise not_found(f"trace {trace_id}")
        sha, name = row.sha256, row.filename
    data = await run_in_threadpool(tracestore.timeline_of, request.app.state.settings.data_dir,
                                   sha, name, steps)
    return {"trace_id": trace_id, **data}
