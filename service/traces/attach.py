"""Attaching a trace to a run: analyze, store content-addressed, record; a failure after the file
was stored removes it again unless another trace row holds the same content.

An upload (`accept`) checks the file is a trace at all, stores it and records it `pending`; the
analysis is a durable job (`analyze_pending`, run from service/jobs/) that makes it `done` (or
`failed`, with the reason). Local attachments (seed, `attach_file`) still analyze in place."""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collectors.traces.representative import warnings_for

from ..db import Session, SessionFactory, transaction
from ..errors import Invalid, NotFound
from ..runs import queries as runs_repo
from ..sandbox import Sandbox
from . import analysis, intake, storage
from . import queries as repo

if TYPE_CHECKING:
    from ..runs.tables import Run
    from .tables import TraceFile


def check_run(sessions: SessionFactory, run_id: int) -> str:
    """The run's benchmark name; NotFound when there is no such run."""
    with transaction(sessions) as session:
        run = repo.run(session, run_id)
        if run is None:
            raise NotFound(f"run {run_id} not found")
        return run.benchmark.name


def _record(sessions: SessionFactory, data_dir: Path, tmp: Path, sha: str, run_id: int,
            add: Callable[[Session, Run, list[TraceFile]], dict[str, Any]]
            ) -> tuple[dict[str, Any], bool]:
    """Move the received file into storage and, in one transaction, attach it to the run with
    `add` (given the session, the run and the traces it holds). The same content for the same
    run again is the first attachment. On any failure the stored file is removed again unless
    another trace row holds the same content."""
    final = storage.commit_file(tmp, data_dir, sha)
    try:
        with transaction(sessions) as session:
            run = repo.run(session, run_id)
            if run is None:
                raise NotFound(f"run {run_id} not found")
            held = runs_repo.traces_of(session, [run_id])
            same = next((t for t in held if t.sha256 == sha), None)
            if same is not None:
                return _out(same, len(same_group(held, same))), False
            return add(session, run, held), True
    except BaseException:
        with transaction(sessions) as session:
            if not runs_repo.trace_with_sha(session, sha):
                final.unlink(missing_ok=True)
        raise


def attach(sessions: SessionFactory, data_dir: Path, run_id: int, tmp: Path, name: str,
           sha: str, size: int, set_size: int = 1) -> tuple[dict[str, Any], bool]:
    """Analyze the received file `tmp`, move it into storage and attach it to the run.
    Returns (trace, created). The same content attached to the same run again is the first
    attachment (stored once). Once the run holds `set_size` files (the ranks of a TP run),
    the run's summary covers all of them together."""
    try:
        fmt, summary = analysis.analyze_file(tmp, name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

    def add(session: Session, run: Run, held: list[TraceFile]) -> dict[str, Any]:
        row = repo.add(session, run_id, sha, name, size, fmt, dict(summary),
                       datetime.now(timezone.utc))
        held = same_group(held, row) + [row]  # the run's own set: another group never joins it
        if len(held) >= set_size:
            repo.set_run_summary(run, _run_summary(run, summary if len(held) == 1 else
                                                   analysis.analyze_set(_files(data_dir, held))))
        return _out(row, len(held))
    return _record(sessions, data_dir, tmp, sha, run_id, add)


def _files(data_dir: Path, held: list[TraceFile]) -> list[tuple[Path, str]]:
    return [(storage.path_for(data_dir, t.sha256), t.filename) for t in held]


def _run_summary(run: Run, summary: dict[str, Any] | Any) -> dict[str, Any]:
    """The run's trace summary: the set's, with the warnings of spec/metrics.md, Representativeness
    warnings (can this
    profile show what the timed trials ran?) from the run's config."""
    whole = dict(summary)
    whole["warnings"] = list(whole.get("warnings") or []) + warnings_for(whole, run.config or {})
    return whole


def state_of(row: TraceFile) -> str:
    return row.state or "done"  # rows stored before analysis was a job were analyzed at upload


def _out(row: TraceFile, set_files: int) -> dict[str, Any]:
    state = state_of(row)
    return {"id": row.id, "run_id": row.run_id, "sha256": row.sha256, "filename": row.filename,
            "size_bytes": row.size_bytes, "format": row.format,
            "summary": row.summary if state == "done" else None, "set_files": set_files,
            "state": state, "error": row.error}


def accept(sessions: SessionFactory, data_dir: Path, run_id: int, tmp: Path, name: str,
           sha: str, size: int, set_size: int = 1) -> tuple[dict[str, Any], bool]:
    """An upload: refuse at once what is not a trace at all (422, nothing kept), store the file
    and record it `pending`. Returns (trace, created); the caller queues its analysis when
    created. The same content for the same run again is the first upload."""
    try:
        fmt = intake.check_file(tmp, name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

    def add(session: Session, run: Run, held: list[TraceFile]) -> dict[str, Any]:
        row = repo.add(session, run_id, sha, name, size, fmt, {}, datetime.now(timezone.utc),
                       state="pending", set_size=set_size)
        return _out(row, len(same_group(held, row)) + 1)
    return _record(sessions, data_dir, tmp, sha, run_id, add)


def analyze_pending(sessions: SessionFactory, data_dir: Path, trace_id: int,
                    before: Callable[[], None] = lambda: None,
                    sandbox: Sandbox | None = None) -> None:
    """The analysis job: analyze a pending trace and record it `done`; once the run's set is
    complete (`set_size` files, all done), the run's summary covers them together. A file that
    is no readable trace, or whose analysis breaks a limit of the sandbox (its deadline, memory,
    CPU time, the inflate caps), is recorded `failed` with the reason, once (not retried: it
    would end the same way).
    A trace already done or gone is left as it is (the job may run twice after a crash).

    No analysis runs inside a transaction: the file's and the set's are done first, then one
    short transaction (the run's row locked, PostgreSQL) checks that nothing changed meanwhile
    and records the trace `done` with the run's summary together, so a crash in between leaves
    the trace `pending` and its job, retried, does it again. A rank of a set keeps its loaded
    columns (storage.columns_dir) until the set's summary is recorded, so the set's analysis
    parses no rank twice."""
    _analyze_pending(sessions, data_dir, trace_id, before, sandbox)
    sweep_columns(sessions, data_dir)  # after every job, those that return early too


def _analyze_pending(sessions: SessionFactory, data_dir: Path, trace_id: int,
                     before: Callable[[], None], sandbox: Sandbox | None) -> None:
    with transaction(sessions) as session:
        row = repo.get(session, trace_id)
        if row is None or state_of(row) != "pending":
            return
        sha, name, of_set = row.sha256, row.filename, (row.set_size or 1) > 1
    keep_in = storage.columns_dir(data_dir) if of_set else None  # the set reads them back
    before()
    try:
        fmt, summary = analysis.analyze_file(storage.path_for(data_dir, sha), name, keep_in,
                                               sandbox)
    except Invalid as e:
        mark_failed(sessions, trace_id, e.message, data_dir)
        return
    whole: tuple[list[int], Any] | None = None  # (the set's trace ids, its summary)
    for attempt in range(3):
        with transaction(sessions) as session:
            row = repo.get(session, trace_id)
            if row is None or state_of(row) != "pending":
                return
            # the run row is locked so two ranks finishing together see each other
            run = runs_repo.lock_run(session, row.run_id)
            held = same_group(runs_repo.traces_of(session, [row.run_id]), row)
            ids = [t.id for t in held]
            complete = run is not None and len(held) >= (row.set_size or 1) and all(
                state_of(t) == "done" for t in held if t.id != trace_id)
            needs_set = complete and len(held) > 1 and (whole is None or whole[0] != ids)
            if not needs_set or attempt == 2:
                if needs_set:  # the set kept changing under the analysis: this once in the lock
                    whole = (ids, analysis.analyze_set(_files(data_dir, held), keep_in,
                                                         sandbox))
                repo.mark_done(row, fmt, dict(summary))
                if complete and run is not None:
                    _record_set(run, held, _run_summary(
                        run, whole[1] if whole is not None and len(held) > 1 else summary))
                return
            files = _files(data_dir, held)
        whole = (ids, analysis.analyze_set(files, keep_in, sandbox))  # outside a transaction


def same_group(held: list[TraceFile], row: TraceFile) -> list[TraceFile]:
    """The run's traces of `row`'s group: the set it completes (rank files of one capture)."""
    return [t for t in held if (t.trace_group or 0) == (row.trace_group or 0)]


def _record_set(run: Run, held: list[TraceFile], summary: dict[str, Any]) -> None:
    """A complete set's summary: the run's own group's is the run's trace summary; another
    group's (another phase or capture) is kept on each of its files."""
    if not (held[0].trace_group or 0):
        repo.set_run_summary(run, summary)
        return
    repo.set_group_summary(held, summary)


def sweep_columns(sessions: SessionFactory, data_dir: Path) -> None:
    """Remove the kept columns (storage.columns_dir) that no set being assembled still needs:
    its summary recorded, a rank failed, the run deleted, a job that died after recording. Run
    after each analysis job; a set whose last rank never arrives keeps its columns."""
    kept = storage.kept_columns(data_dir)
    if not kept:
        return
    with transaction(sessions) as session:
        needed = repo.open_set_shas(session, list(kept))
    for sha, files in kept.items():
        if sha not in needed:
            for f in files:
                f.unlink(missing_ok=True)


def mark_failed(sessions: SessionFactory, trace_id: int, error: str,
                data_dir: Path | None = None) -> None:
    """Record the trace `failed`. Its set can no longer complete, so the columns its ranks
    kept for the set's analysis (given `data_dir`) are removed."""
    with transaction(sessions) as session:
        row = repo.get(session, trace_id)
        if row is not None and state_of(row) == "pending":
            repo.mark_failed(row, error)
    if data_dir is not None:
        sweep_columns(sessions, data_dir)


def attach_file(sessions: SessionFactory, data_dir: Path, run_id: int,
                path: Path) -> dict[str, Any]:
    """Attach a trace file from disk (seed, local ingest): copied, never moved."""
    name = intake.check_filename(path.name)
    tmp = storage.tmp_dir(data_dir) / f"local-{run_id}-{path.name}"
    h = hashlib.sha256()
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        while chunk := src.read(1 << 20):
            h.update(chunk)
            dst.write(chunk)
    return attach(sessions, data_dir, run_id, tmp, name, h.hexdigest(), path.stat().st_size)[0]


def download_path(session: Session, data_dir: Path, trace_id: int) -> tuple[Path, str]:
    row = repo.get(session, trace_id)
    if row is None:
        raise NotFound(f"trace {trace_id} not found")
    path = storage.path_for(data_dir, row.sha256)
    if not path.exists():
        raise NotFound(f"trace {trace_id}: file is missing from storage")
    return path, row.filename


def timeline(sessions: SessionFactory, data_dir: Path, trace_id: int, steps: int,
             sandbox: Sandbox | None = None) -> dict[str, Any]:
    """The trace's timeline (parsed in the sandbox); a trace whose analysis failed is refused
    with its reason, not parsed again."""
    with transaction(sessions) as session:
        row = repo.get(session, trace_id)
        if row is None:
            raise NotFound(f"trace {trace_id} not found")
        sha, name, state, error = row.sha256, row.filename, state_of(row), row.error
    if state == "failed":
        raise Invalid(f"trace {trace_id} failed its analysis: {error}", code="bad_trace")
    return {"trace_id": trace_id,
            **analysis.timeline_of(data_dir, sha, name, steps, sandbox)}


