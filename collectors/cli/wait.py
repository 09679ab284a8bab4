"""`ingest --wait`: after the upload, poll the runs until each of their traces is analyzed
(`done`) or `failed`, so what reads them next (the gate, the PR comment) sees the profiler
evidence."""
from __future__ import annotations

import sys
import time

from ..errors import CliError
from ..idlist import summarize_ids
from ..record import get_json

POLL_S = 1.0


def trace_states(server: str, run_ids: list[int]) -> dict[int, list[dict]]:
    """Each run's traces as the server lists them (id, filename, state, error)."""

    return {rid: list(get_json(server, f"/api/v1/runs/{rid}").get("traces") or [])
            for rid in run_ids}


def wait_for_traces(server: str, run_ids: list[int], seconds: float) -> bool:
    """Block until every trace of `run_ids` is `done` or `failed`, or `seconds` pass. True when
    all are analyzed; False (with a warning) when some are still pending at the deadline.
    CliError (exit 2) naming the trace and its error when one failed."""
    deadline = time.monotonic() + seconds
    while True:
        states = trace_states(server, run_ids)
        failed = [(rid, t) for rid, ts in states.items() for t in ts if t.get("state") == "failed"]
        if failed:
            rid, t = failed[0]
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            raise CliError(f"trace {t.get('filename')} of run {rid} failed its analysis: "
                           f"{t.get('error') or 'no reason given'}{more}")
        pending = sum(t.get("state") == "pending" for ts in states.values() for t in ts)
        if not pending:
            n = sum(map(len, states.values()))
            if n:
                print(f"analyzed {n} trace(s) of {summarize_ids(run_ids, 'run')}",
                      file=sys.stderr)
            return True
        if time.monotonic() >= deadline:
            print(f"warning: {pending} trace(s) still pending after {seconds:g} s: profiler "
                  "evidence pending", file=sys.stderr)
            return False
        time.sleep(POLL_S)
