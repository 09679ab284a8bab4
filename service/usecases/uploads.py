"""Runs and their traces commit together: trace files are staged first (content-addressed, no
run yet), then the batch names them and one transaction stores the runs and their trace rows.

A staged file is in `data_dir/staged/<sha256>`. The batch links each named file into trace
storage before its transaction; if the transaction fails, what it linked is removed again
unless a trace row holds the same content, and the staged files stay for a retry. Once the
transaction commits, the staged files it used are removed. Staged files no batch named are
removed after `STAGED_TTL_S`."""
from __future__ import annotations

import contextlib
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..db import Session, SessionFactory, transaction
from ..errors import Invalid
from ..repositories import runs as runs_repo
from ..repositories import traces as traces_repo
from ..schemas import RunIn, StagedTraceRef
from ..traces import intake, storage
from . import ingest

STAGED_TTL_S = 24 * 3600


def staged_dir(data_dir: Path) -> Path:
    d = data_dir / "staged"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _staged_path(data_dir: Path, sha: str) -> Path:
    return staged_dir(data_dir) / sha


def _sweep_stale(data_dir: Path, now: float) -> None:
    """Staged files no batch named within STAGED_TTL_S are removed."""
    for f in staged_dir(data_dir).iterdir():
        with contextlib.suppress(FileNotFoundError):
            if now - f.stat().st_mtime > STAGED_TTL_S:
                f.unlink()


def stage(data_dir: Path, tmp: Path, name: str, sha: str, size: int) -> tuple[dict[str, Any], bool]:
    """Keep a received trace file for a batch to name: refused at once if it is not a trace at
    all (422, nothing kept). Returns (what the batch names it by, created)."""
    try:
        fmt = intake.check_file(tmp, name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    now = time.time()
    _sweep_stale(data_dir, now)
    dest = _staged_path(data_dir, sha)
    created = not dest.exists()
    if created:
        os.replace(tmp, dest)
    else:
        tmp.unlink(missing_ok=True)
        os.utime(dest, (now, now))  # named again: its time to live starts again
    return {"sha256": sha, "filename": name, "size_bytes": size, "format": fmt}, created


def _resolve(data_dir: Path, manifest: list[list[StagedTraceRef]]
             ) -> list[list[tuple[str, str, int, str, int, str | None]]]:
    """Each run's staged files as (sha, filename, size, format, group, phase); Invalid naming
    the first file that is not staged. Nothing is stored."""
    out = []
    for i, refs in enumerate(manifest):
        files = []
        for j, ref in enumerate(refs):
            name = intake.check_filename(ref.filename)
            path = _staged_path(data_dir, ref.sha256)
            if not path.is_file():
                raise Invalid(f"traces[{i}][{j}]: no staged trace with sha256 {ref.sha256} "
                              "(upload it to POST /api/v1/traces/stage first)",
                              f"traces.{i}.{j}.sha256", code="trace_not_staged")
            files.append((ref.sha256, name, path.stat().st_size,
                          intake.check_file(path, name), ref.group, ref.phase))
        out.append(files)
    return out


def _link_into_storage(data_dir: Path, shas: set[str]) -> list[Path]:
    """Put each staged file into trace storage (a hard link where the file system allows,
    else a copy); returns the stored paths that did not exist before."""
    made = []
    for sha in sorted(shas):
        final = storage.path_for(data_dir, sha)
        if final.exists():
            continue
        final.parent.mkdir(parents=True, exist_ok=True)
        part = final.with_name(f".{sha}.part")
        part.unlink(missing_ok=True)
        try:
            os.link(_staged_path(data_dir, sha), part)
        except OSError:
            shutil.copyfile(_staged_path(data_dir, sha), part)
        os.replace(part, final)
        made.append(final)
    return made


def _attach(session: Session, ids: list[int],
            files: list[list[tuple[str, str, int, str, int, str | None]]]) -> list[int]:
    """In the batch's transaction: each run's staged files as `pending` trace rows (a set's
    size is the number named in its group), those the run holds already (same content) left as
    they are. Returns the ids of the rows added."""
    added: list[int] = []
    now = datetime.now(timezone.utc)
    for rid, run_files in zip(ids, files):
        if not run_files:
            continue
        # the run's row locked (PostgreSQL): two retries of one batch attach each file once
        traces_repo.lock_run(session, rid)
        held = {t.sha256 for t in runs_repo.traces_of(session, [rid])}
        sizes: dict[int, int] = {}
        for f in run_files:
            sizes[f[4]] = sizes.get(f[4], 0) + 1
        for sha, name, size, fmt, group, phase in run_files:
            if sha in held:
                continue
            held.add(sha)
            row = traces_repo.add(session, rid, sha, name, size, fmt, {}, now, state="pending",
                                  set_size=sizes[group], group=group, phase=phase)
            added.append(row.id)
    return added


def store_runs_with_traces(sessions: SessionFactory, data_dir: Path, runs: list[RunIn],
                           manifest: list[list[StagedTraceRef]]
                           ) -> tuple[list[int], int, list[int]]:
    """The batch and its staged traces in one transaction. Returns (run ids in order, how many
    runs were new, ids of the trace rows added); the caller queues their analysis."""
    files = _resolve(data_dir, manifest)
    shas = {sha for run_files in files for sha, *_ in run_files}
    made = _link_into_storage(data_dir, shas)
    added: list[int] = []

    def then(session: Session, ids: list[int]) -> None:
        added[:] = _attach(session, ids, files)

    try:
        ids, created = ingest.store_runs(sessions, runs, then=then)
    except BaseException:
        with transaction(sessions) as session:
            for final in made:
                if not runs_repo.trace_with_sha(session, final.name):
                    final.unlink(missing_ok=True)
        raise
    for sha in shas:  # committed: the stored copies are the runs' traces now
        _staged_path(data_dir, sha).unlink(missing_ok=True)
    return ids, created, added
