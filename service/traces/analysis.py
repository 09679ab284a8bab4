"""The analysis runner: THE trace pipeline (collectors/traces/pipeline.py) on stored files in a
sandboxed process (service/sandbox.py), one file or the ranks of a run together, and a trace's
timeline, parsed the same way (a few at once per API process) and cached on disk."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, cast

from collectors.traces import Options, TraceError
from collectors.traces.analysis import project, step_regex_of, timeline
from collectors.traces.load import load_trace, sniff
from collectors.traces.pipeline import SERVER_CHECK, analyze_files
from collectors.traces.steps import keep_regex
from collectors.traces.summary import TraceSummary

from ..errors import Invalid, NotFound
from ..sandbox import Sandbox, sandboxed
from .storage import path_for, stored_format, temp_name, timeline_path

KERNELS_KEPT = 50
NAME_KEPT = 1000  # characters of a stored name (a kernel's, a step's, a warning); more is cut
TIMELINES_AT_ONCE = 2  # sandboxed timeline analyses at once in one API process
_timelines = threading.BoundedSemaphore(TIMELINES_AT_ONCE)


def analyze_file(path: Path, filename: str, keep_in: Path | None = None,
                 sandbox: Sandbox | None = None) -> tuple[str, TraceSummary]:
    """(format, summary); TraceError becomes 422 naming the file. `keep_in`: where the file's
    loaded columns are kept for its set's analysis (analyze_set)."""
    try:
        fmt = sniff(path, filename)
    except TraceError as e:
        raise Invalid(str(e).replace(str(path), filename), "body", code="bad_trace") from None
    return stored_format(fmt), analyze_set([(path, filename)], keep_in, sandbox)


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def _analyze(paths: list[Path], names: list[str], keep_in: Path | None,
             sandbox: Sandbox | None) -> TraceSummary:
    """THE trace pipeline, sandboxed."""
    def work() -> TraceSummary:
        return analyze_files(paths, Options(), check=SERVER_CHECK, names=names, keep_in=keep_in)
    return sandboxed(work, _size(paths), sandbox)


def _named(e: TraceError, files: list[tuple[Path, str]]) -> str:
    """The error with the stored files' paths as their uploaded names; one that names no file
    (a limit of the analysis) names them all."""
    msg = str(e)
    if not any(str(p) in msg for p, _ in files):
        msg = f"{', '.join(name for _, name in files)}: {msg}"
    for p, name in files:
        msg = msg.replace(str(p), name)
    return msg


def analyze_set(files: list[tuple[Path, str]], keep_in: Path | None = None,
                sandbox: Sandbox | None = None) -> TraceSummary:
    """The ranks of one run (one file each): THE trace pipeline on the stored files, with the
    server's ordering check, in a sandboxed analysis process; TraceError (a limit of the
    sandbox too) becomes 422 naming the uploaded files. `keep_in`: the folder of the ranks'
    loaded columns (storage.columns_dir), read where a rank's are there and saved where not."""
    try:
        summary = _analyze([p for p, _ in files], [name for _, name in files], keep_in, sandbox)
    except TraceError as e:
        raise Invalid(_named(e, files), "body", code="bad_trace") from None
    summary["source"] = ", ".join(name for _, name in files)
    summary["kernels"] = summary["kernels"][:KERNELS_KEPT]
    return cast(TraceSummary, cut_names(summary))


def cut_names(value: Any) -> Any:
    """`value` with every string (and mapping key) longer than NAME_KEPT characters cut there,
    with a marker saying how long it was: a trace's names are the uploader's, and one name of
    megabytes would make every answer that shows it megabytes."""
    if isinstance(value, str):
        if len(value) <= NAME_KEPT:
            return value
        return f"{value[:NAME_KEPT]}… [cut: {len(value):,} characters]"
    if isinstance(value, dict):
        return {cut_names(k): cut_names(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [cut_names(v) for v in value]
    return value


def _timeline(path: Path, filename: str, steps: int) -> dict:
    trace = load_trace(path, keep_regex(None), None, filename)
    data = timeline(trace, Options(), steps=steps)
    proj = project(trace, step_regex_of(trace))
    data["total_steps"] = int(proj.step_start_ns.shape[0])
    return data


def timeline_of(data_dir: Path, sha: str, filename: str, steps: int,
                sandbox: Sandbox | None = None) -> dict:
    """A trace's timeline of `steps` steps, parsed in a sandboxed process (at most
    TIMELINES_AT_ONCE at once here) at the request's CPU priority, not a job's (a page waits
    for it), and kept for the next request."""
    cache = timeline_path(data_dir, sha, steps)
    if cache.exists():
        return json.loads(cache.read_text())
    path = path_for(data_dir, sha)
    if not path.exists():
        raise NotFound("trace file is missing from storage")
    try:
        with _timelines:
            data = sandboxed(lambda: _timeline(path, filename, steps), _size([path]), sandbox,
                            idle=False)
    except TraceError as e:
        raise Invalid(_named(e, [(path, filename)]), code="bad_trace") from None
    cache.parent.mkdir(parents=True, exist_ok=True)
    part = cache.with_name(temp_name(".timeline") + cache.name)  # whole, or not there
    part.write_text(json.dumps(data))
    os.replace(part, cache)
    return data
