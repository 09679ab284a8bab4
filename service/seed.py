"""Load committed run records (and the traces they name) into the database: the real H200 data
a newcomer sees. Uses the same service functions as the API."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import ValidationError

from .config import Settings
from .db import make_engine, session_factory, transaction
from .errors import Invalid, from_validation
from .schemas import RunIn
from .usecases import alerts, baselines, ingest, runs, summaries, traces

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
        raise Invalid(f"{root}: no such folder")
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
            raise Invalid(f"{f}: {from_validation(e).message}") from None
        run_id, created = ingest.store_run(sessions, run)
        stored += created
        for tf in files if created else []:
            # relative to the record file (as collectors write them), else to the repository
            path = Path(tf) if Path(tf).is_absolute() else (
                f.parent / tf if (f.parent / tf).exists() else repo_root / tf)
            if path.exists():
                traces.attach_file(sessions, settings.data_dir, run_id, path)
        if progress and (i % 10 == 0 or i == len(items)):
            print(f"seed: {i}/{len(items)} run records", file=sys.stderr, flush=True)
    bfile = root / BASELINES_FILE
    if bfile.exists():
        for b in json.loads(bfile.read_text()):
            with transaction(sessions) as session:
                baselines.set_from_labels(session, b["benchmark"], b["name"], b["labels"])
    with transaction(sessions) as session:  # the seeded histories' change points
        new = alerts.evaluate(session)
    with transaction(sessions) as session:  # what the pages read (a job does it after ingest)
        summaries.refresh_all(session)
    if progress and new:
        print(f"seed: {len(new)} alert(s) from change points of the default-branch histories",
              file=sys.stderr, flush=True)
    from .jobs import open_queue, tasks

    queue = open_queue(settings, sessions)  # the worker delivers them
    try:
        tasks.enqueue_deliveries(queue, sessions, settings)
    finally:
        queue.close()
    return stored


def seed_if_empty(settings: Settings, directory: str | Path, progress: bool = False) -> int:
    sessions = session_factory(make_engine(settings.database_url))
    if runs.any_stored(sessions):
        return 0
    return seed(settings, directory, progress)
