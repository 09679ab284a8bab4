"""Baselines: create, move, show, list, delete, and resolve a baseline reference.

A reference (spec/api.md) is a baseline *name* and nothing else, unless it says otherwise:
`label:L`, `commit:SHA` (a prefix of at least 7) and `runs:1,2,3` select runs explicitly. An
unknown name is NotFound, never a silent fall-back to a label."""
from __future__ import annotations

from ..db import Session
from ..errors import Invalid, NotFound
from ..runs import queries as runs_repo
from . import queries as repo

COMMIT_MIN = 7


def resolve(session: Session, bench_id: int, bench_name: str, ref: str) -> list[int]:
    """The run ids a baseline reference selects (possibly with repeats of one record; the
    verdict use case counts each record once)."""
    kind, sep, value = ref.partition(":")
    if sep and kind == "label":
        ids = runs_repo.ids_where(session, bench_id, label=value)
        if not ids:
            raise NotFound(f"baseline {ref!r}: no run of {bench_name} has label {value!r}",
                           "baseline")
        return ids
    if sep and kind == "commit":
        if len(value) < COMMIT_MIN:
            raise Invalid(f"baseline {ref!r}: a commit needs at least {COMMIT_MIN} characters",
                          "baseline")
        ids = runs_repo.ids_where(session, bench_id, commit=value)
        if not ids:
            raise NotFound(f"baseline {ref!r}: no run of {bench_name} has a commit matching "
                           f"{value!r}", "baseline")
        return ids
    if sep and kind == "runs":
        try:
            ids = sorted({int(x) for x in value.split(",") if x.strip()})
        except ValueError:
            raise Invalid(f"baseline {ref!r}: expected runs:ID,ID,...", "baseline") from None
        if not ids:
            raise Invalid(f"baseline {ref!r}: expected runs:ID,ID,...", "baseline")
        keys = runs_repo.run_keys(session, ids)
        missing = [i for i in ids if i not in keys or keys[i].benchmark_id != bench_id]
        if missing:
            raise NotFound(f"baseline {ref!r}: run {missing[0]} not found in {bench_name}",
                           "baseline")
        return ids
    ids_or_none = repo.run_ids_of(session, bench_id, ref)
    if ids_or_none is None:
        raise NotFound(f"baseline {ref!r} of {bench_name} not found (a plain name is a "
                       f"baseline name; select runs with label:{ref}, commit:SHA or runs:IDS)",
                       "baseline")
    return ids_or_none


def create(session: Session, name: str, bench_name: str, run_ids: list[int]) -> dict:
    row = repo.create(session, name, bench_name, run_ids)
    session.flush()
    return repo.out(session, row)


def move(session: Session, bench_name: str, name: str, run_ids: list[int]) -> dict:
    return repo.out(session, repo.move(session, bench_name, name, run_ids))


def set_runs(session: Session, bench_name: str, name: str, run_ids: list[int]) -> tuple[dict, bool]:
    """Create the baseline, or move it when it exists. Returns (baseline, created)."""
    if repo.get(session, bench_name, name) is None:
        return create(session, name, bench_name, run_ids), True
    return move(session, bench_name, name, run_ids), False


def show(session: Session, bench_name: str, name: str) -> dict:
    return repo.out(session, repo.get_or_404(session, bench_name, name))


def list_all(session: Session, bench_name: str | None = None) -> list[dict]:
    return [repo.out(session, r) for r in repo.list_all(session, bench_name)]


def delete(session: Session, bench_name: str, name: str) -> None:
    repo.delete(session, bench_name, name)


def set_from_labels(session: Session, bench_name: str, name: str, labels: list[str]) -> bool:
    """Point a baseline at every run carrying one of these labels (the shared-expert PR's
    baselines).
    False when the benchmark or the runs are not there."""
    bench_id = runs_repo.benchmark_id(session, bench_name)
    if bench_id is None:
        return False
    ids = sorted({i for label in labels for i in runs_repo.ids_where(session, bench_id, label=label)})
    if not ids:
        return False
    set_runs(session, bench_name, name, ids)
    return True
