"""Where run records go: `--out` (a JSON list, traces copied beside it), `--server` (one batch,
then each run's trace set; spec/api.md v1.2 item 11), else standard output."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import CliError


def emit(records: list[dict], out: str | None, server: str | None,
         base: Path | None = None) -> None:
    """Write records (with content-derived idempotency keys) to --out and/or post them to
    --server as one batch, then upload each run's trace set. The whole file is checked before
    anything is posted; `base` is the folder relative trace paths are relative to."""
    from ..record import write_records

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
    from ..env import bisect_tag
    from ..record import check, with_key

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
    """Runs and their traces land together (spec/api.md v1.2 item 11): every trace is checked
    before anything is posted, and a trace the server refuses takes the runs of this batch
    with it."""
    from ..record import check_trace, delete_run, post_records, post_trace, resolve_trace_files

    sets = [resolve_trace_files(rec, base) for rec in records]
    for files in sets:
        for f in files:
            try:
                check_trace(f)
            except ValueError as e:
                raise CliError(f"{e}; nothing posted") from None
    ids = post_records(server, [{k: v for k, v in r.items() if k != "trace_files"}
                                for r in records])
    print(f"posted {len(ids)} run(s) as one batch: ids {', '.join(map(str, ids))}",
          file=sys.stderr)
    for rid, files in zip(ids, sets):
        for f in files:
            try:
                res = post_trace(server, rid, f, set_size=len(files))
            except RuntimeError as e:
                for gone in ids:
                    delete_run(server, gone)
                raise CliError(f"trace file {f}: {e}; run(s) {', '.join(map(str, ids))} "
                               "removed, nothing stored") from None
            print(f"  run {rid}: uploaded trace {f.name} (id {res.get('id')})", file=sys.stderr)
    for rid in ids:
        print(rid, flush=True)  # ids on stdout, one a line, for scripts
