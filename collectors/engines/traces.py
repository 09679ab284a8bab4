"""An engine's own profiler output as a run's trace set (spec/api.md, Engine traces at ingest).

`perfwarden ingest RESULT [LOG] --trace FILE|DIR ...`: files are taken as given; a folder
contributes the trace files in it (and below it):
- vLLM's torch profiler: one `*.pt.trace.json.gz` per rank (`VLLM_TORCH_PROFILER_DIR`);
- SGLang's: `{id}-TP-{rank}[-DP-..]-{stage}.trace.json.gz`, one per rank and profiled stage;
  where a folder holds decode files, only those are the set (the prefill files are other steps
  of the same ranks, and the decode steps are what the series measures);
- nsys: a `.sqlite` export (plain or gzipped), else a `.nsys-rep` report;
- this project's collector: `trace_M{M}_rank{r}.json.gz`.
The set is ordered by rank (the number after `TP-`, `rank`, `TP` or `tp` in the name).

Files given together are grouped into the traces of the run (`trace_groups`): rank files of one
capture form one set (their names alike but for the rank numbers and time stamps, each rank
once); files of another phase (SGLang's prefill or extend beside its decode files) or another
capture (a name that differs otherwise, a rank seen again) are other traces of the same run. All
are attached: the decode set of the first capture (else its first set) first, as the run's own
trace (its summary is the run's), then the others, each summarized as a set of its own. The
record names every file in `trace_files`, in that order, and `trace_groups` the groups' sizes
and phases (`[{"phase": "decode", "files": 2}, {"phase": "prefill", "files": 2}]`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..traces.load import check_events, rank_of
from ..traces.model import TraceError
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


_RANK_TOKEN = re.compile(r"(TP-|DP-|PP-|EP-|rank[_-]?|TP|tp|dp|pp|dcp|ep)\d+")
_TIME_STAMP = re.compile(r"\d{10,}(?:\.\d+)?")


def _phase(name: str) -> str:
    if _DECODE.search(name):
        return "decode"
    return "prefill" if _STAGE.search(name) else ""


def _capture_key(name: str) -> str:
    """A file's name less its phase, rank numbers and time stamps: alike for the ranks of one
    capture."""
    name = _STAGE.sub("", _DECODE.sub("", name))
    return _TIME_STAMP.sub("#", _RANK_TOKEN.sub(lambda m: m.group(1) + "#", name))


def _stamp(name: str) -> float:
    m = _TIME_STAMP.search(name)
    return float(m.group()) if m else 0.0


def trace_groups(files: Sequence[Path]) -> list[tuple[str, list[Path]]]:
    """(phase, files in rank order) of each trace of the run, in the order first given. A name
    with no rank in it is a capture of its own; a rank seen again under one name is a later
    capture (its time stamp orders them)."""
    keyed: dict[tuple[str, str], list[Path]] = {}
    for p in files:
        key = (_capture_key(p.name) if rank_of(p.name) is not None else p.name, _phase(p.name))
        keyed.setdefault(key, []).append(p)
    out: list[tuple[str, list[Path]]] = []
    for (_, phase), group in keyed.items():
        by_rank: dict[int | None, list[Path]] = {}
        for p in sorted(group, key=lambda p: (_stamp(p.name), p.name)):
            by_rank.setdefault(rank_of(p.name), []).append(p)
        for n in range(max(len(v) for v in by_rank.values())):
            ranks = [v[n] for v in by_rank.values() if len(v) > n]
            out.append((phase, sorted(ranks, key=lambda p: (rank_of(p.name) or 0, p.name))))
    return out


def _describe(phase: str, files: list[Path]) -> str:
    ranks = [r for r in (rank_of(p.name) for p in files) if r is not None]
    what = f"{phase} " if phase else ""
    return (f"{what}{files[0].name}" + (f" (ranks {', '.join(map(str, ranks))})" if len(ranks) > 1
                                        else ""))


def attach(records: list[dict], items: Sequence[str | Path]) -> list[str]:
    """Put the run's traces on its record (`trace_files`, and `trace_groups` where there are
    several); returns notes. One run only: a trace is the profile of one configuration."""
    files = trace_set(items)
    for p in files:  # before anything is posted: a file that is no trace is refused here
        try:
            check_events(p)
        except TraceError as e:
            raise EngineOutputError(f"--trace {e}") from None
    if len(records) != 1:
        raise EngineOutputError(f"--trace attaches a trace set to one run, but the input makes "
                                f"{len(records)} runs (a sweep?): ingest each configuration with "
                                "its own traces, or give --trials for repeats of one")
    groups = trace_groups(files)
    main = next((g for g in groups if g[0] == "decode"), groups[0])
    ordered = [main] + [g for g in groups if g is not main]
    records[0]["trace_files"] = [str(p) for _, fs in ordered for p in fs]
    if len(ordered) == 1:
        records[0].pop("trace_groups", None)
        return []
    records[0]["trace_groups"] = [{"phase": phase or None, "files": len(fs)}
                                  for phase, fs in ordered]
    return [f"--trace: {len(groups)} traces of this run (other phases or captures), each "
            f"summarized: the run's {_describe(*main)}; beside it "
            f"{'; '.join(_describe(*g) for g in ordered[1:])}"]


def groups_of(record: dict, n: int) -> list[tuple[int, str | None]]:
    """(group, phase) of each of the record's `n` trace files: from its `trace_groups`, else
    all the run's own (group 0). ValueError when the sizes do not add up to the files."""
    if not record.get("trace_groups"):
        return [(0, None)] * n
    out: list[tuple[int, str | None]] = []
    for g, item in enumerate(record["trace_groups"]):
        size = item.get("files") if isinstance(item, dict) else None
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"trace_groups[{g}]: expected {{\"phase\": ..., \"files\": N}}")
        out += [(g, item.get("phase"))] * size
    if len(out) != n:
        raise ValueError(f"trace_groups name {len(out)} file(s), trace_files {n}")
    return out
