"""An engine's own profiler output as a run's trace set (spec/api.md v1.2, item 13).

`perfwarden ingest RESULT [LOG] --trace FILE|DIR ...`: files are taken as given; a folder
contributes the trace files in it (and below it):
- vLLM's torch profiler: one `*.pt.trace.json.gz` per rank (`VLLM_TORCH_PROFILER_DIR`);
- SGLang's: `{id}-TP-{rank}[-DP-..]-{stage}.trace.json.gz`, one per rank and profiled stage;
  where a folder holds decode files, only those are the set (the prefill files are other steps
  of the same ranks, and the decode steps are what the series measures);
- nsys: a `.sqlite` export (plain or gzipped), else a `.nsys-rep` report;
- this project's collector: `trace_M{M}_rank{r}.json.gz`.
The set is ordered by rank (the number after `TP-`, `rank`, `TP` or `tp` in the name).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..traces.load import rank_of
from .vllm import EngineOutputError

_KINETO = re.compile(r"\.json(?:\.gz)?$")
_NSYS = re.compile(r"\.(?:sqlite(?:\.gz)?|nsys-rep)$")
_DECODE = re.compile(r"-decode\b", re.IGNORECASE)
_STAGE = re.compile(r"-(?:prefill|extend)\b", re.IGNORECASE)


def _is_trace_name(name: str) -> bool:
    if _NSYS.search(name):
        return True
    # Kineto: the profilers' own names; a bare .json is a result file more often than a trace
    return bool(_KINETO.search(name)) and ("trace" in name or name.endswith(".json.gz"))


def _from_dir(d: Path) -> list[Path]:
    files = sorted(p for p in d.rglob("*") if p.is_file() and not p.name.startswith(".")
                   and _is_trace_name(p.name))
    if any(_DECODE.search(p.name) for p in files):
        files = [p for p in files if not _STAGE.search(p.name)
                 and (_DECODE.search(p.name) or not p.name.endswith(".trace.json.gz"))]
    # an nsys export next to its report: the export
    stems = {re.sub(r"\.sqlite(?:\.gz)?$", "", p.name) for p in files if ".sqlite" in p.name}
    files = [p for p in files if not (p.name.endswith(".nsys-rep")
                                      and p.name.removesuffix(".nsys-rep") in stems)]
    if not files:
        raise EngineOutputError(f"{d}: no trace files in it (*.pt.trace.json.gz, "
                                "*.trace.json.gz, *.json.gz, *.sqlite[.gz], *.nsys-rep)")
    return files


def trace_set(items: Sequence[str | Path]) -> list[Path]:
    """The files of `--trace FILE|DIR ...`, absolute, in rank order, each once."""
    out: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            out.extend(_from_dir(item))
        elif item.is_file():
            out.append(item)
        else:
            raise EngineOutputError(f"--trace {item}: no such file or folder")
    seen: set[Path] = set()
    uniq = []
    for p in (p.resolve() for p in out):
        if p not in seen:
            seen.add(p)
            uniq.append(p)
    return sorted(uniq, key=lambda p: (rank_of(p.name) is None, rank_of(p.name) or 0, p.name))


def attach(records: list[dict], items: Sequence[str | Path]) -> list[str]:
    """Put the trace set on the run record; returns warnings. One run only: a trace is the
    profile of one configuration."""
    files = trace_set(items)
    if len(records) != 1:
        raise EngineOutputError(f"--trace attaches a trace set to one run, but the input makes "
                                f"{len(records)} runs (a sweep?): ingest each configuration with "
                                "its own traces, or give --trials for repeats of one")
    rec = records[0]
    rec["trace_files"] = [str(p) for p in files]
    warnings = []
    ranks = [rank_of(p.name) for p in files]
    known = [r for r in ranks if r is not None]
    if len(known) != len(set(known)):
        warnings.append(f"--trace: {len(files)} files but ranks {sorted(known)} repeat: are two "
                        "profiling sessions in one folder? Each file is taken as its own rank")
    return warnings
