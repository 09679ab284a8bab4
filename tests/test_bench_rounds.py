"""The speed bench times the tools it compares in turn, a round at a time (bench/trace_speed.py,
measure_rounds): a drift of the machine's speed falls on all of them."""
from __future__ import annotations

import sys

from bench.trace_speed import measure_rounds


def test_each_round_runs_every_tool_once_in_turn(tmp_path):
    log = tmp_path / "order"
    jobs = [(name, "trace", 1.0, [sys.executable, "-c",
                                  f"open({str(log)!r}, 'a').write({name!r})"], None, None)
            for name in ("a", "b")]
    jobs.append(("c", "trace", 1.0, [sys.executable, "-c", "raise SystemExit(3)"], None, None))
    rows = measure_rounds(jobs, 2)
    assert log.read_text() == "ababab"  # two timed rounds, then the runs sampled for memory
    assert [(r[0], r[5]) for r in rows] == [("a", 0), ("b", 0), ("c", 3)]
    assert all(r[3] > 0 for r in rows)
