"""Attaching a trace to a run: analyze, store content-addressed, record; a failure after the file
was stored removes it again unless another trace row holds the same content."""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from .. import tracestore
from ..db import transaction
from ..errors import NotFound
from ..models import Run, TraceFile
from ..repositories import runs as runs_repo


def check_run(sessions: sessionmaker[Session], run_id: int) -> None:
    with transaction(sessions) as session:
        if session.get(Run, run_id) is None:
            raise NotFound(f"run {run_id} not found")


def attach(sessions: sessionmaker[Session], data_dir: Path, run_id: int, tmp: Path, name: str,
           sha: str, size: int) -> dict[str, Any]:
    """Analyze the received file `tmp`, move it into storage and attach it to the run."""
    try:
        fmt, summary = tracestore.analyze_file(tmp, name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    final = tracestore.commit_file(tmp, data_dir, sha)
    try:
        with transaction(sessions) as session:
            run = session.get(Run, run_id)
            if run is None:
                raise NotFound(f"run {run_id} not found")
            row = TraceFile(run_id=run_id, sha256=sha, filename=name, size_bytes=size, format=fmt,
                            summary=summary, created_at=datetime.now(timezone.utc))
            session.add(row)
            run.trace_summary = dict(summary)
            session.flush()
            trace_id = row.id
    except BaseException:
        with transaction(sessions) as session:
            if not runs_repo.trace_with_sha(session, sha):
                final.unlink(missing_ok=True)
        raise
    return {"id": trace_id, "run_id": run_id, "sha256": sha, "filename": name, "size_bytes": size,
            "format": fmt, "summary": summary}


def attach_file(sessions: sessionmaker[Session], data_dir: Path, run_id: int,
                path: Path) -> dict[str, Any]:
    """Attach a trace file from disk (seed, local ingest): copied, never moved."""
    name = tracestore.check_filename(path.name)
    tmp_dir = data_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    tmp = tmp_dir / f"local-{run_id}-{path.name}"
    h = hashlib.sha256()
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        while chunk := src.read(1 << 20):
            h.update(chunk)
            dst.write(chunk)
    return attach(sessions, data_dir, run_id, tmp, name, h.hexdigest(), path.stat().st_size)


def download_path(session: Session, data_dir: Path, trace_id: int) -> tuple[Path, str]:
    row = session.get(TraceFile, trace_id)
    if row is None:
        raise NotFound(f"trace {trace_id} not found")
    path = tracestore.path_for(data_dir, row.sha256)
    if not path.exists():
        raise NotFound(f"trace {trace_id}: file is missing from storage")
    return path, row.filename


def timeline(sessions: sessionmaker[Session], data_dir: Path, trace_id: int,
             steps: int) -> dict[str, Any]:
    with transaction(sessions) as session:
        row = session.get(TraceFile, trace_id)
        if row is None:
            raise NotFound(f"trace {trace_id} not found")
        sha, name = row.sha256, row.filename
    return {"trace_id": trace_id, **tracestore.timeline_of(data_dir, sha, name, steps)}


