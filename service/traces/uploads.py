"""Runs and their traces commit together: trace files are staged first (content-addressed, no
run yet), then the batch names them and one transaction stores the runs and their trace rows.

A staged file is in `data_dir/staged/<sha256>`. The batch links each named file into trace
storage before its transaction; if the transaction fails, what it linked is removed again
unless a trace row holds the same content, and the staged files stay for a retry. Once the
transaction commits, the staged files it used are removed. Staged files no batch named are
removed after `STAGED_TTL_S`."""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..db import Session, SessionFactory, transaction
from ..errors import Invalid, TooLarge
from ..runs import ingest
from ..runs import queries as runs_repo
from ..runs.schemas import RunIn, StagedTraceRef
from . import intake, storage
from . import queries as traces_repo

STAGED_TTL_S = 24 * 3600


def _staged_path(data_dir: Path, sha: str) -> Path:
    return storage.staged_dir(data_dir) / sha


def _owners_dir(data_dir: Path) -> Path:
    """staged/.owners/<owner>/<sha256>: a hard link to each staged file per writer that staged
    it, so what a writer holds is what its folder holds."""
    return storage.staged_dir(data_dir) / ".owners"


def _owner_dir(data_dir: Path, owner: str) -> Path:
    return _owners_dir(data_dir) / hashlib.sha256(owner.encode()).hexdigest()[:32]


def _sweep_stale(data_dir: Path, now: float) -> None:
    """Staged files no batch named within STAGED_TTL_S are removed, and the writers' links to
    files no longer staged."""
    for f in storage.staged_dir(data_dir).iterdir():
        with contextlib.suppress(FileNotFoundError):
            if f.is_file() and now - f.stat().st_mtime > STAGED_TTL_S:
                f.unlink()
    owners = _owners_dir(data_dir)
    for link in owners.glob("*/*") if owners.is_dir() else []:
        if not _staged_path(data_dir, link.name).is_file():
            link.unlink(missing_ok=True)


def _held_bytes(folder: Path) -> int:
    total = 0
    for f in folder.iterdir() if folder.is_dir() else []:
        with contextlib.suppress(FileNotFoundError):
            if f.is_file():
                total += f.stat().st_size
    return total


_staging = threading.Lock()  # a quota's check and the file it admits, together


def stage(data_dir: Path, tmp: Path, name: str, sha: str, size: int, owner: str = "anonymous",
          quota: tuple[int, int] = (16 << 30, 4 << 30)) -> tuple[dict[str, Any], bool]:
    """Keep a received trace file for a batch to name: refused at once if it is not a trace at
    all (422, nothing kept), or where it would take the staged files past `quota` (all of
    them, those of `owner`: 413, nothing kept). Returns (what the batch names it by,
    created)."""
    try:
        fmt = intake.check_file(tmp, name)
        with _staging:
            created = _admit(data_dir, tmp, sha, size, owner, quota)
    finally:
        tmp.unlink(missing_ok=True)
    return {"sha256": sha, "filename": name, "size_bytes": size, "format": fmt}, created


def _admit(data_dir: Path, tmp: Path, sha: str, size: int, owner: str,
           quota: tuple[int, int]) -> bool:
    now = time.time()
    _sweep_stale(data_dir, now)
    dest = _staged_path(data_dir, sha)
    mine = _owner_dir(data_dir, owner)
    created = not dest.exists()
    if not (mine / sha).exists():
        everyone, held = _held_bytes(storage.staged_dir(data_dir)), _held_bytes(mine)
        if created and everyone + size > quota[0]:
            raise TooLarge(f"the staged traces hold {everyone:,} bytes; this file would pass "
                           f"the {quota[0]:,}-byte limit of all of them "
                           "(PERFWARDEN_MAX_STAGED_BYTES): name staged files in a batch first")
        if held + size > quota[1]:
            raise TooLarge(f"the traces {owner!r} staged hold {held:,} bytes; this file would "
                           f"pass the {quota[1]:,}-byte limit of one writer "
                           "(PERFWARDEN_MAX_STAGED_BYTES_PER_TOKEN): name them in a batch first")
    if created:
        os.replace(tmp, dest)
    else:
        os.utime(dest, (now, now))  # named again: its time to live starts again
    mine.mkdir(parents=True, exist_ok=True)
    if not (mine / sha).exists():
        try:
            os.link(dest, mine / sha)
        except OSError:
            if created:
                dest.unlink(missing_ok=True)
            raise
    return created


def _committed(sessions: SessionFactory, runs: list[RunIn]) -> dict[int, set[str]]:
    """The trace contents each record's run holds already, by the record's index, where the
    record's idempotency key names a stored run (a retry of a batch that committed)."""
    keys = {i: r.idempotency_key for i, r in enumerate(runs) if r.idempotency_key}
    if not keys:
        return {}
    out: dict[int, set[str]] = {}
    with transaction(sessions) as session:
        for i, key in keys.items():
            prior = runs_repo.find_by_key(session, key)
            if prior is not None:
                out[i] = {t.sha256 for t in runs_repo.traces_of(session, [prior.id])}
    return out


def _resolve(data_dir: Path, manifest: list[list[StagedTraceRef]],
             held: dict[int, set[str]] | None = None
             ) -> list[list[tuple[str, str, int, str, int, str | None]]]:
    """Each run's staged files as (sha, filename, size, format, group, phase); Invalid naming
    the first file that is not staged. A file the record's stored run holds already (`held`: a
    retried batch, whose staging was used up by the commit) is read from trace storage. Nothing
    is stored."""
    out = []
    for i, refs in enumerate(manifest):
        files = []
        for j, ref in enumerate(refs):
            name = intake.check_filename(ref.filename)
            path = _staged_path(data_dir, ref.sha256)
            if not path.is_file() and ref.sha256 in (held or {}).get(i, set()):
                path = storage.path_for(data_dir, ref.sha256)
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
    made: list[Path] = []
    for sha in sorted(shas):
        final = storage.path_for(data_dir, sha)
        if final.exists():
            continue
        final.parent.mkdir(parents=True, exist_ok=True)
        part = final.with_name(storage.temp_name(".part") + sha)
        part.unlink(missing_ok=True)
        try:
            try:
                os.link(_staged_path(data_dir, sha), part)
            except OSError:
                shutil.copyfile(_staged_path(data_dir, sha), part)
            os.replace(part, final)
        except BaseException:  # a full disk: none of the batch's new copies stays
            part.unlink(missing_ok=True)
            for f in made:
                f.unlink(missing_ok=True)
            raise
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
    files = _resolve(data_dir, manifest, _committed(sessions, runs))
    shas = {sha for run_files in files for sha, *_ in run_files}
    made = _link_into_storage(data_dir, {sha for sha in shas
                                         if _staged_path(data_dir, sha).is_file()})
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
        for link in _owners_dir(data_dir).glob(f"*/{sha}"):
            link.unlink(missing_ok=True)
    return ids, created, added
