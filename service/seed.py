"""Load committed run records (and the traces they name) into the database: the real H200 data
a newcomer sees. Uses the same service functions as the API."""
from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import func, select

from .config import Settings
from .db import make_engine, session_factory, transaction
from .errors import ApiError, from_validation
from .models import Run, TraceFile
from .repositories import baselines, runs
from .schemas import RunIn
from . import tracestore

BASELINES_FILE = "baselines.json"


def _records(root: Path) -> list[tuple[Path, dict]]:
    out = []
    for f in sorted(root.rglob("*.json")):
        if f.name == BASELINES_FILE:
            continue
        data = json.loads(f.read_text())
        for rec in data if isinstance(data, list) else [data]:
            if isinstance(rec, dict) and "benchmark" in rec and "metrics" in rec:
                out.append((f, rec))
    return out


def seed(settings: Settings, directory: str | Path, progress: bool = False) -> int:
    root = Path(directory)
    if not root.is_dir():
        raise ApiError(422, "validation_error", f"{root}: no such folder")
    repo_root = root
    while repo_root != repo_root.parent and not (repo_root / "data").is_dir():
        repo_root = repo_root.parent
    sessions = session_factory(make_engine(settings.database_url))
    items = _records(root)
    stored = 0
    for i, (f, rec) in enumerate(items, 1):
        files = rec.pop("trace_files", [])
        rec.setdefault("idempotency_key", f"seed:{f.relative_to(root)}:{rec['config'].get('batch_size', i)}:"
                                          f"{rec.get('label', '')}")
        try:
            run = RunIn.model_validate(rec)
        except ValidationError as e:
            raise ApiError(422, "validation_error", f"{f}: {from_validation(e).message}") from None
        with transaction(sessions) as session:
            run_id, created = runs.create_run(session, run, runs.body_hash(run))
        stored += created
        for tf in files if created else []:
            path = (repo_root / tf) if not Path(tf).is_absolute() else Path(tf)
            if path.exists():
                _attach(settings, sessions, run_id, path)
        if progress and (i % 10 == 0 or i == len(items)):
            print(f"seed: {i}/{len(items)} run records", file=sys.stderr, flush=True)
    bfile = root / BASELINES_FILE
    if bfile.exists():
        for b in json.loads(bfile.read_text()):
            with transaction(sessions) as session:
                if baselines.get(session, b["benchmark"], b["name"]) is not None:
                    continue
                ids = [r for (r,) in session.execute(select(Run.id).where(
                    Run.label.in_(b["labels"])).order_by(Run.id))]
                if ids:
                    baselines.create(session, b["name"], b["benchmark"], ids)
    return stored


def _attach(settings: Settings, sessions, run_id: int, path: Path) -> None:
    import hashlib
    import shutil

    data_dir = settings.data_dir
    tmp = data_dir / "tmp" / f"seed-{path.name}"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, tmp)
    sha = hashlib.sha256(tmp.read_bytes()).hexdigest()
    fmt, summary = tracestore.analyze_file(tmp, path.name)
    tracestore.commit_file(tmp, data_dir, sha)
    with transaction(sessions) as session:
        session.add(TraceFile(run_id=run_id, sha256=sha, filename=path.name,
                              size_bytes=path.stat().st_size, format=fmt, summary=summary,
                              created_at=datetime.now(timezone.utc)))
        session.get(Run, run_id).trace_summary = summary


def seed_if_empty(settings: Settings, directory: str | Path, progress: bool = False) -> int:
    sessions = session_factory(make_engine(settings.database_url))
    with transaction(sessions) as session:
        if (session.scalar(select(func.count()).select_from(Run)) or 0) > 0:
            return 0
    return seed(settings, directory, progress)
