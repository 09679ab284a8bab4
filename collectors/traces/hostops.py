"""The host operators of a trace with no device work (a PyTorch-profiler trace of a CPU run):
count and time per operator name (`aten::bmm`, ...) inside the step ranges, so two CPU runs can
be told apart by the operators they ran, as device traces are by their kernels. Only top-level
operators count (an operator inside another is part of its parent's time)."""
from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

OP_CATS = {"cpu_op", "operator"}
RANGE_CATS = {"user_annotation"}


def _events(path: Path) -> list[dict]:
    with path.open("rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"
            and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]


def host_ops(paths: Sequence[str | os.PathLike], step_regex: str, limit: int = 200) -> list[dict]:
    """Per operator name: count, total and mean time (us) inside the step ranges (all operators
    when no range matches), largest total first."""
    rx = re.compile(step_regex)
    rows: dict[str, list[float]] = {}
    for p in paths:
        events = _events(Path(p))
        steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                       if e.get("cat") in RANGE_CATS and rx.search(str(e.get("name", ""))))
        ops = sorted((e for e in events if e.get("cat") in OP_CATS),
                     key=lambda e: (e.get("tid"), e["ts"], -e["dur"]))
        end_of: dict = {}  # per thread: where the enclosing top-level operator ends
        for e in ops:
            t0, t1 = e["ts"], e["ts"] + e["dur"]
            if t0 < end_of.get(e.get("tid"), float("-inf")):
                continue  # inside a top-level operator
            end_of[e.get("tid")] = t1
            if steps and not any(a <= t0 and t1 <= b for a, b in steps):
                continue
            row = rows.setdefault(str(e.get("name")), [0, 0.0])
            row[0] += 1
            row[1] += float(e["dur"])
    top = sorted(rows.items(), key=lambda item: -item[1][1])[:limit]
    return [{"name": n, "kind": "host_op", "count": int(c), "total_us": t,
             "mean_us": t / c if c else 0.0} for n, (c, t) in top]
