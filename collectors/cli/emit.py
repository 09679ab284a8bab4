"""Where run records go: `--out` (a JSON list, traces copied beside it), `--server` (the runs'
trace sets staged, then one batch; spec/api.md, "Runs and traces commit together"), else
standard output."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..engines.traces import groups_of
from ..env import bisect_tag
from ..errors import CliError, Refused, Unreachable
from ..idlist import summarize_ids
from ..record import (
    check,
    check_trace,
    post_records,
    resolve_trace_files,
    stage_trace,
    with_key,
    write_records,
)


def emit(records: list[dict], out: str | None, server: str | None,
         base: Path | None = None) -> None:
    """Write records (with content-derived idempotency keys) to --out and/or post them to
    --server as one batch, then upload each run's trace set. The whole file is checked before
    anything is posted; `base` is the folder relative trace paths are relative to."""

    _tag_and_check(records)
    if out:
        write_records(records, out)
        if out != "-":
            print(f"wrote {len(records)} run record(s) to {out}", file=sys.stderr)
            base = Path(out).parent
    if server:
        _post(records, server, base or Path.cwd())
    if not out and not server:
        json.dump(records, sys.stdout, indent=1)
        print()


def _tag_and_check(records: list[dict]) -> None:
    """Runs of the commit a bisect checked out carry its tag; every record must pass `check`."""

    for rec in records:
        tag = bisect_tag(rec.get("commit"))
        if tag:  # a run of the commit the bisect checked out
            rec["bisect"] = tag
            rec["commit"] = rec.get("commit") or tag["commit"]
    for i, rec in enumerate(records):
        try:
            check(with_key(rec))
        except ValueError as e:
            raise CliError(f"record {i}: {e}") from None


def _post(records: list[dict], server: str, base: Path) -> None:
    """Runs and their traces land together (spec/api.md, "Runs and traces commit together"):
    every trace is checked, then uploaded to the server's staging area, then the batch names
    them and the server stores the runs with their traces in one transaction. A trace the
    server refuses stops the ingest before any run is posted; nothing is ever deleted, and the
    same command again finishes what an interrupted one began (the same ids)."""

    sets = [resolve_trace_files(rec, base, outside=True) for rec in records]
    try:
        groups = [groups_of(rec, len(files)) for rec, files in zip(records, sets)]
    except ValueError as e:
        raise CliError(f"{e}; nothing posted") from None
    for files in sets:
        for f in files:
            try:
                check_trace(f)
            except ValueError as e:
                raise CliError(f"{e}; nothing posted") from None
    staged: list[list[dict]] = []
    for files, grouped in zip(sets, groups):
        refs = []
        for f, (group, phase) in zip(files, grouped):
            try:
                res = stage_trace(server, f)
            except Unreachable as e:  # exit 69: the server, named first
                raise Unreachable(f"{e} (uploading trace {f.name}); nothing posted") from None
            except Refused as e:  # its status's exit code
                raise Refused(f"trace {f.name}: {e}; nothing posted", e.status) from None
            except RuntimeError as e:
                raise CliError(f"trace file {f}: {e}; nothing posted") from None
            print(f"  uploaded trace {f.name} (sha256 {res['sha256'][:12]})", file=sys.stderr)
            ref = {"filename": res["filename"], "sha256": res["sha256"]}
            if group:  # another phase or capture than the run's own trace
                ref.update(group=group, **({"phase": phase} if phase else {}))
            elif phase:
                ref["phase"] = phase
            refs.append(ref)
        staged.append(refs)
    ids = post_records(server, [{k: v for k, v in r.items()
                                 if k not in ("trace_files", "trace_groups")} for r in records],
                       traces=staged if any(staged) else None)

    print(f"posted {len(ids)} run(s) as one batch: {summarize_ids(ids)}", file=sys.stderr)
    for rid in ids:
        print(rid, flush=True)  # ids on stdout, one a line, for scripts
