"""Load committed run records (and the traces they name) into the database: the real H200 data
a newcomer sees. Uses the same service functions as the API."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import ValidationError

from .alerts import lifecycle
from .baselines import named as baselines
from .config import Settings
from .db import make_engine, session_factory, transaction
from .errors import Invalid, from_validation
from .jobs import tasks
from .jobs.queue import open_queue
from .runs import ingest
from .runs.schemas import RunIn
from .traces import attach as traces
from .usecases import runs, summaries

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


def _inside(root: Path, record: Path, repo_root: Path, name: object) -> Path | None:
    """A trace file a record names: relative to the record file (as collectors write them), else
    to the repository. Either way it lies inside the seeded folder or, where that folder is part
    of the repository's data folder, inside that data folder (a record of data/h200/runs names
    data/h200/traces/...); an absolute path, a `..` or a link out of it is refused. None where it
    is not there."""
    if not isinstance(name, str) or not name or Path(name).is_absolute() or \
            ".." in Path(name).parts:
        raise Invalid(f"{record}: trace file {str(name)[:200]!r} is not a relative path inside "
                      "the seeded folder")
    top = root.resolve()
    data = (repo_root / "data").resolve()
    tops = (top, data) if top.is_relative_to(data) else (top,)
    for path in (record.parent / name, repo_root / name):
        if path.exists():
            if not any(path.resolve().is_relative_to(t) for t in tops):
                raise Invalid(f"{record}: trace file {name[:200]!r} lies outside the seeded folder "
                              f"{root}")
            return path
    return None


def seed(settings: Settings, directory: str | Path, progress: bool = False) -> int:
    root = Path(directory)
    if not root.is_dir():
        raise Invalid(f"{root}: no such folder")
    repo_root = root
    while repo_root != repo_root.parent and not (repo_root / "data").is_dir():
        repo_root = repo_root.parent
    items = _records(root)
    checked = []  # every record and trace path first: a bad one refuses the folder, none stored
    for i, (f, rec) in enumerate(items, 1):
        files = rec.pop("trace_files", [])
        rec.setdefault("idempotency_key", f"seed:{f.relative_to(root)}:{rec['config'].get('batch_size', i)}:"
                                          f"{rec.get('label', '')}")
        try:
            run = RunIn.model_validate(rec)
        except ValidationError as e:
            raise Invalid(f"{f}: {from_validation(e).message}") from None
        checked.append((run, [_inside(root, f, repo_root, tf) for tf in files]))
    sessions = session_factory(make_engine(settings.database_url))
    stored = 0
    for i, (run, paths) in enumerate(checked, 1):
        run_id, created = ingest.store_run(sessions, run)
        stored += created
        for path in paths if created else []:
            if path is not None:
                traces.attach_file(sessions, settings.data_dir, run_id, path)
        if progress and (i % 10 == 0 or i == len(items)):
            print(f"seed: {i}/{len(items)} run records", file=sys.stderr, flush=True)
    bfile = root / BASELINES_FILE
    if bfile.exists():
        for b in json.loads(bfile.read_text()):
            with transaction(sessions) as session:
                baselines.set_from_labels(session, b["benchmark"], b["name"], b["labels"])
    with transaction(sessions) as session:  # the seeded histories' change points
        new = lifecycle.evaluate(session)
    with transaction(sessions) as session:  # what the pages read (a job does it after ingest)
        summaries.refresh_all(session)
    if progress and new:
        print(f"seed: {len(new)} alert(s) from change points of the default-branch histories",
              file=sys.stderr, flush=True)

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
