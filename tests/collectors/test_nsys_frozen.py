"""The nsys loader gives, on every committed real export, exactly what the loader before its
rewrite gave (commit 3cc0ff1): every column of the op model (a digest of its bytes and dtype), the
names, ranges, stream waits and labels, and the whole `analyze` summary.

The expected values in tests/data/nsys_frozen.json were written by that loader: this file run as a
script in a checkout of 3cc0ff1 (`python -m tests.collectors.test_nsys_frozen`).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from collectors.traces import analyze_files
from collectors.traces.model import Trace
from collectors.traces.nsys import load_nsys_sqlite
from tests.conftest import DATA, H200

FROZEN = DATA / "nsys_frozen.json"
FILES = sorted(p.name for p in (H200 / "traces").glob("*.sqlite.gz")) + ["nsys_two_streams.sqlite"]


def _path(name: str) -> Path:
    return DATA / name if (DATA / name).exists() else H200 / "traces" / name


def _digest(a: np.ndarray) -> str:
    return f"{a.dtype.str}:{a.shape[0]}:{hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}"


def _text(items) -> str:
    return hashlib.sha256("\x00".join(map(str, items)).encode()).hexdigest()


def fingerprint(t: Trace) -> dict:
    cols = {f"{part}.{f}": _digest(getattr(getattr(t, part), f)) for part, fields in (
        ("ops", ("start_ns", "end_ns", "device", "stream", "corr", "proc", "name_id", "kind")),
        ("calls", ("start_ns", "end_ns", "thread", "corr", "proc")),
        ("ranges", ("start_ns", "end_ns", "thread", "proc"))) for f in fields}
    return {**cols, "names": _text(t.names), "range_names": _text(t.ranges.names),
            "waits": _text(t.waits), "device_labels": {str(k): v for k, v in t.device_labels.items()},
            "producer": t.producer, "has_sync_records": t.has_sync_records,
            "graph_trace_rows": t.graph_trace_rows, "warnings": t.warnings,
            "range_name_counts": _text(sorted(t.range_name_counts.items()))}


def _plain(name: str, tmp: Path) -> Path:
    src = _path(name)
    if not name.endswith(".gz"):
        return src
    out = tmp / name.removesuffix(".gz")
    with gzip.open(src) as a, open(out, "wb") as b:
        shutil.copyfileobj(a, b)
    return out


@pytest.fixture(scope="module")
def frozen() -> dict:
    return json.loads(FROZEN.read_text())


def test_every_committed_export_is_frozen(frozen):
    assert sorted(frozen) == sorted(FILES) and len(FILES) >= 7


@pytest.mark.parametrize("name", FILES)
def test_loader_output_unchanged(name, frozen, tmp_path):
    got = fingerprint(load_nsys_sqlite(_plain(name, tmp_path)))
    want = frozen[name]["trace"]
    assert {k: v for k, v in got.items() if got[k] != want.get(k)} == {}
    assert got == want


# the one device numbering (rank and local GPU), how a main stream was chosen and the ordering
# check run with no flags came after the frozen summaries: held apart (the ordering check has
# tests of its own)
NAMING = ("rank", "gpu", "device_label", "chosen_by")


def _unnamed(summary: dict) -> dict:
    out = {k: v for k, v in summary.items() if k != "ordering"}
    return {**out, **{k: [{a: b for a, b in r.items() if a not in NAMING}
                          for r in summary.get(k) or []] for k in ("streams", "kernels")}}


@pytest.mark.parametrize("name", FILES)
def test_summary_unchanged(name, frozen):
    got = json.loads(json.dumps(analyze_files([_path(name)]), sort_keys=True))
    assert _unnamed(got) == _unnamed(frozen[name]["summary"])
    for row in got["streams"] + got["kernels"]:
        assert row["device_label"].startswith(f"rank {row['rank']} / GPU {row['gpu']}")
    assert all(r["chosen_by"] for r in got["streams"] if r["role"] == "main")


def freeze(load: Callable[[Path], Trace], tmp: Path) -> dict:
    out = {}
    for name in FILES:
        out[name] = {"trace": fingerprint(load(_plain(name, tmp))),
                     "summary": json.loads(json.dumps(analyze_files([_path(name)]), sort_keys=True))}
    return out


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        FROZEN.write_text(json.dumps(freeze(load_nsys_sqlite, Path(d)), indent=1, sort_keys=True)
                          + "\n")
    print(f"wrote {FROZEN}")


def test_text_where_an_integer_is_needed_is_an_error_not_zero(tmp_path):
    """A kernel row whose start holds text is a broken export: one line naming the table,
    never a kernel at time 0."""
    import sqlite3

    from collectors.traces.model import TraceError

    db = tmp_path / "broken.sqlite"
    shutil.copy(DATA / "nsys_two_streams.sqlite", db)
    con = sqlite3.connect(db)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'n/a' WHERE rowid = "
                "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    con.commit()
    con.close()
    with pytest.raises(TraceError, match="CUPTI_ACTIVITY_KIND_KERNEL.*not an integer"):
        load_nsys_sqlite(db)


def test_null_values_keep_every_column_on_its_row(tmp_path):
    """Columns are read one text each and SQLite's group_concat skips NULLs: a kernel whose
    correlation id or process is NULL must still line up, with -1 in that field, not shift the
    rest of its column onto the wrong kernels."""
    import sqlite3

    db = tmp_path / "nulls.sqlite"
    shutil.copy(DATA / "nsys_two_streams.sqlite", db)
    con = sqlite3.connect(db)
    ids = [r[0] for r in con.execute("SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid")]
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = NULL WHERE rowid = ?",
                (ids[1],))
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL WHERE rowid = ?", (ids[2],))
    con.commit()
    want = con.execute("SELECT start, \"end\", streamId, COALESCE(correlationId, -1), "
                       "globalPid IS NULL FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid").fetchall()
    con.close()
    ops = load_nsys_sqlite(db).ops
    n = len(want)
    assert ops.start_ns[:n].tolist() == [w[0] for w in want]
    assert ops.end_ns[:n].tolist() == [w[1] for w in want]
    assert ops.stream[:n].tolist() == [w[2] for w in want]
    assert ops.corr[:n].tolist() == [w[3] for w in want]
    assert ops.corr[1] == -1 and ops.proc[2] == (-1 >> 24) & 0xFFFFFF
    assert ops.proc[3] != ops.proc[2]
