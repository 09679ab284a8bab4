"""Traces built to hang, exhaust or mislead the loader end in one clear TraceError, fast: an nsys
SQLite file whose tables read are views (a recursive one never ends), have triggers or are
virtual; rowids spread over 2**62 (a range per 262,144 rowids never ends); a value longer than
the loader reads; gzip data that inflates past the caps on bytes or ratio (.json.gz, .sqlite.gz).
The builders here are shared with the service's tests (tests/service/test_sandbox.py)."""
from __future__ import annotations

import gzip
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest

from collectors.traces import nsys, nsys_schema
from collectors.traces.gz import MAX_INFLATED_ENV, MAX_RATIO_ENV
from collectors.traces.load import load_trace
from collectors.traces.model import TraceError
from tests.conftest import H200

REAL_GZ = H200 / "traces" / "tp1-overlap-graphs-nsys_M1.sqlite.gz"
KERNEL_COLS = ('start INTEGER, "end" INTEGER, deviceId INTEGER, streamId INTEGER, '
               'correlationId INTEGER, globalPid INTEGER, shortName INTEGER')
RECURSIVE_VIEW = ("CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(x) AS "
                  "(SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x AS start, x AS \"end\", "
                  "0 AS deviceId, 7 AS streamId, x AS correlationId, 0 AS globalPid, "
                  "1 AS shortName FROM r")


def sqlite_file(path: Path, script: str, page_size: int = 1024) -> Path:
    """A fresh SQLite file from `script` (small pages: a few KB)."""
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size={page_size}")
    con.executescript("CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
                      "INSERT INTO StringIds VALUES (1, 'kernel_a');" + script)
    con.commit()
    con.close()
    return path


def recursive_view(path: Path) -> Path:
    return sqlite_file(path, RECURSIVE_VIEW + ";")


def with_trigger(path: Path) -> Path:
    return sqlite_file(path, f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL({KERNEL_COLS});"
                             "CREATE TABLE seen(x);"
                             "CREATE TRIGGER t AFTER INSERT ON CUPTI_ACTIVITY_KIND_KERNEL "
                             "BEGIN INSERT INTO seen VALUES (1); END;")


def real_with(path: Path, script: str) -> Path:
    """A real nsys export with `script` run on it."""
    with gzip.open(REAL_GZ, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(path)
    con.executescript(script)
    con.commit()
    con.close()
    return path


def gzip_bomb(path: Path, head: bytes, fill: bytes, tail: bytes, inflated: int) -> Path:
    """`head`, then `fill` repeated to `inflated` bytes, then `tail`, gzipped as it is written."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = fill * ((1 << 20) // len(fill))
    with open(path, "wb") as f:
        f.write(c.compress(head))
        for _ in range(inflated // len(block)):
            f.write(c.compress(block))
        f.write(c.compress(tail) + c.flush())
    return path


def json_bomb(path: Path, inflated: int = 100 << 20) -> Path:
    """A valid Chrome trace (no events) padded with JSON whitespace."""
    return gzip_bomb(path, b'{"traceEvents": [', b" ", b"]}", inflated)


def sqlite_bomb(path: Path, inflated: int = 100 << 20) -> Path:
    return gzip_bomb(path, nsys.SQLITE_MAGIC, b"\x00", b"", inflated)


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(TraceError) as e:
        load_trace(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg, msg
    for w in words:
        assert w in msg, msg
    return msg


def test_a_recursive_view_named_as_the_kernel_table_is_refused(tmp_path):
    f = recursive_view(tmp_path / "view.sqlite")
    assert f.stat().st_size <= 4096
    _refused(f, "CUPTI_ACTIVITY_KIND_KERNEL is a view")


def test_a_view_named_in_another_case_is_refused(tmp_path):
    f = sqlite_file(tmp_path / "v.sqlite", "CREATE VIEW nvtx_events AS SELECT 1 AS start;")
    _refused(f, "nvtx_events is a view")


def test_a_trigger_on_a_table_read_is_refused(tmp_path):
    _refused(with_trigger(tmp_path / "t.sqlite"), "has a trigger (t)")


def test_a_real_export_with_a_trigger_added_is_refused_and_unchanged_without(tmp_path):
    plain = real_with(tmp_path / "plain.sqlite", "")
    assert len(load_trace(plain).ops) > 0
    f = real_with(tmp_path / "trig.sqlite", "CREATE TABLE seen(x); CREATE TRIGGER spy AFTER "
                  "UPDATE ON StringIds BEGIN INSERT INTO seen VALUES (1); END;")
    _refused(f, "table StringIds has a trigger (spy)")


def test_a_view_or_trigger_elsewhere_is_no_reason_to_refuse(tmp_path):
    f = real_with(tmp_path / "other.sqlite", "CREATE TABLE notes(x); CREATE VIEW v AS SELECT * "
                  "FROM notes; CREATE TRIGGER n AFTER INSERT ON notes BEGIN SELECT 1; END;")
    assert len(load_trace(f).ops) > 0


def test_a_virtual_table_read_is_refused(tmp_path):
    f = sqlite_file(tmp_path / "fts.sqlite",
                    "CREATE VIRTUAL TABLE NVTX_EVENTS USING fts5(text);")
    _refused(f, "NVTX_EVENTS is a virtual table")


def test_rowids_spread_over_2_62_are_read_as_the_two_rows_they_are(tmp_path):
    f = sqlite_file(tmp_path / "sparse.sqlite", f"""
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL({KERNEL_COLS});
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(rowid, start, "end", deviceId, streamId,
            correlationId, globalPid, shortName)
        VALUES (1, 10, 20, 0, 7, 1, 0, 1), (4611686018427387904, 30, 40, 0, 7, 2, 0, 1);""")
    t = load_trace(f)
    assert t.ops.start_ns.tolist() == [10, 30] and t.names == ["kernel_a"]


def test_sparse_rowids_in_many_chunks_read_every_row_once(tmp_path, monkeypatch):
    monkeypatch.setattr(nsys, "CHUNK", 4)
    monkeypatch.setattr(nsys, "MAX_SPANS", 2)
    rows = ", ".join(f"({i * 1000 + 1}, {i}, {i + 1}, 0, 7, {i}, 0, 1)" for i in range(23))
    f = sqlite_file(tmp_path / "many.sqlite", f"""
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL({KERNEL_COLS});
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(rowid, start, "end", deviceId, streamId,
            correlationId, globalPid, shortName) VALUES {rows};""")
    assert load_trace(f).ops.start_ns.tolist() == list(range(23))


def test_a_value_longer_than_the_loader_reads_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(nsys_schema, "VALUE_LIMIT", 1 << 20)
    f = real_with(tmp_path / "blob.sqlite", "UPDATE StringIds SET value = hex(zeroblob(1048576)) "
                  "WHERE id = (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1);")
    _refused(f, "too big")


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_gzip_bomb_is_refused_by_its_ratio(tmp_path, kind):
    f = (json_bomb if kind == "json" else sqlite_bomb)(tmp_path / f"bomb.{kind}.gz")
    assert f.stat().st_size < 200_000
    _refused(f, "refused: its gzip data inflates past 100 times", MAX_RATIO_ENV)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_gzip_file_past_the_byte_cap_is_refused(tmp_path, monkeypatch, kind):
    monkeypatch.setenv(MAX_INFLATED_ENV, str(1 << 20))
    f = (json_bomb if kind == "json" else sqlite_bomb)(tmp_path / f"big.{kind}.gz", 2 << 20)
    _refused(f, "the cap of 1,048,576 bytes", MAX_INFLATED_ENV)


def test_real_gzip_traces_load_within_the_default_caps():
    assert len(load_trace(REAL_GZ).ops) > 0
    assert len(load_trace(H200 / "engines" / "torch-joined-eager.json.gz").ops) > 0


def test_a_bad_cap_setting_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_RATIO_ENV, "lots")
    _refused(json_bomb(tmp_path / "b.json.gz", 1 << 20), f"{MAX_RATIO_ENV}='lots' must be")
