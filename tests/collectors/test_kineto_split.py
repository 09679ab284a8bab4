"""A Kineto document scanned a piece at a time, in this process or in several, gives the
one-call decode's trace, column for column: on every committed real capture, plain and gzipped,
and on documents built to make a cut land where it must not (inside a string, in an array after
the events), or with epoch times, where the pieces are refused and the one-call decode answers.
The committed captures are small, so the tests lower the size at which documents are split and
the size of a piece."""
from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import pytest

from collectors.traces import kineto_scan, kineto_times
from collectors.traces import kineto_split as split
from collectors.traces.kineto import load_kineto
from collectors.traces.model import TraceError
from tests.collectors.test_kineto_paths import TRACES, _columns


def _one_call(path: Path) -> dict:
    return _columns(load_kineto(path))  # the committed files are under SPLIT_MIN_BYTES


@pytest.fixture
def pieces(monkeypatch):
    """Split every document, in pieces of about 2 KB."""
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(split, "PIECE_BYTES", 2048)


def _split_ran(monkeypatch) -> list:
    """Record what each split scan returned (None: refused, the one-call decode answered)."""
    seen: list = []
    real = split.scan

    def spy(*a, **k):
        got = real(*a, **k)
        seen.append(got)
        return got
    monkeypatch.setattr(split, "scan", spy)
    return seen


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_pieces_give_the_one_call_trace_on_real_captures(path, tmp_path, monkeypatch):
    one = _one_call(path)
    plain = tmp_path / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    before = plain.read_bytes()
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(split, "PIECE_BYTES", max(4096, plain.stat().st_size // 40))
    seen = _split_ran(monkeypatch)
    for parts in (1, 2, 3):
        for f in (path, plain):
            got = _columns(load_kineto(f, parts=parts))
            for k in one:
                assert got[k] == one[k], (parts, f.name, k)
    events = json.loads(before)["traceEvents"][:kineto_scan.BATCH]
    epoch = any(isinstance(e.get("ts"), (int, float)) and e["ts"] >= kineto_times.EXACT_LIMIT_US
                for e in events)  # such traces go to the exact one-call decode
    assert seen and all((s is None) == epoch for s in seen), "refused, or epoch times split"
    assert plain.read_bytes() == before  # the brackets went to private pages only


def _event(name: str, ts: float | str, corr: int) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": 2.0,
            "args": {"device": 0, "stream": 7, "correlation": corr}}


def _launch(ts: float | str, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts, "dur": 1.0, "args": {"correlation": corr}}


def _write(tmp_path: Path, doc_text: str) -> Path:
    p = tmp_path / "trace.json"
    p.write_text(doc_text)
    return p


def test_a_cut_inside_a_name_is_refused_and_the_trace_is_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 0)
    tricky = "a" * 4000 + "}, {" + "b" * 4000  # a separator inside a kernel's name
    events = [_launch(1.0, 1), _event("k0", 2.0, 1), _launch(10.0, 2), _event(tricky, 11.0, 2)]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events})
    at = text.find('"traceEvents"')
    mid = at + (len(text) - at) // 2
    m = split._GAP.search(text.encode(), mid)
    assert m is not None and tricky.find("}, {") >= 0 and \
        text.find(tricky) < m.start() < text.find(tricky) + len(tricky), "the cut must hit the name"
    path = _write(tmp_path, text)
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=2)
    assert seen == [None]
    assert got.names == ["k0", tricky]
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1 << 40)
    assert _columns(got) == _one_call(path)


def test_a_cut_in_an_array_after_the_events_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 0)
    events = [_launch(1.0, 1), _event("k0", 2.0, 1)]
    after = [{"x": i, "pad": "p" * 50} for i in range(400)]  # objects, not events
    path = _write(tmp_path, json.dumps({"traceEvents": events, "later": after}))
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=2)
    assert seen == [None]
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1 << 40)
    assert len(got.ops) == 1 and _columns(got) == _one_call(path)


def test_epoch_times_go_to_the_exact_one_call_decode(tmp_path, monkeypatch, pieces):
    events = []
    for i in range(300):  # absolute epoch microseconds, as text float64 cannot hold exactly
        events += [_launch(f"TS1700000000{i:06d}.001", i), _event(f"k{i % 3}", f"TS1700000000{i:06d}.203", i)]
    text = re.sub(r'"TS([0-9.]+)"', r"\1", json.dumps({"traceEvents": events}))
    path = _write(tmp_path, text)
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=3)
    assert seen == [None]
    assert int(got.ops.start_ns[1]) == 1_700_000_000_000_001_203
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1 << 40)
    assert _columns(got) == _one_call(path)


@pytest.mark.parametrize("parts", [1, 3])
def test_an_odd_field_in_a_later_piece_is_read_as_the_one_call_decode_reads_it(
        tmp_path, monkeypatch, pieces, parts):
    events = []
    for i in range(300):
        events += [_launch(10.0 * i, i), _event("k", 10.0 * i + 2, i)]
    events[-1]["ts"] = [1, 2]  # not a number: skipped with a warning by either scan
    path = _write(tmp_path, json.dumps({"traceEvents": events}))
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=parts)
    assert seen == [None]
    monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 1 << 40)
    one = load_kineto(path)
    assert len(got.ops) == 299 and got.warnings == one.warnings and got.warnings
    assert _columns(got) == _columns(one)


def test_a_broken_head_is_the_one_call_decodes_error(tmp_path, monkeypatch, pieces):
    events = [_launch(10.0 * i, i) for i in range(300)]
    text = json.dumps({"traceEvents": events}).replace("{", '{"x": tru, ', 1)
    path = _write(tmp_path, text)
    seen = _split_ran(monkeypatch)
    with pytest.raises(TraceError, match="malformed JSON"):
        load_kineto(path, parts=2)
    assert seen == [None]


def test_only_large_documents_are_split():
    assert split.processes(split.SPLIT_MIN_BYTES - 1, None) == 0
    assert split.processes(split.SPLIT_MIN_BYTES, 4) == 4
    assert split.processes(split.SPLIT_MIN_BYTES, 1) == 1


def _kernels(n: int, t0: float = 0.0) -> list[dict]:
    out = []
    for i in range(n):
        out += [_launch(t0 + 10.0 * i, i), _event(f"k{i % 4}", t0 + 10.0 * i + 2, i)]
    return out


@pytest.mark.parametrize("key", ["traceEvents", "trace\\u0045vents", "\\u0074raceEvents"])
@pytest.mark.parametrize("second", [1, 60, 200])
@pytest.mark.parametrize("parts", [1, 2, 3])
def test_a_second_events_key_is_read_as_the_one_call_decode_reads_it(tmp_path, monkeypatch,
                                                                       pieces, second, parts, key):
    # JSON objects keep the last of two equal keys: the one-call decode reads the second array,
    # its key's letters written plainly or as \u escapes. Only the last piece is searched for
    # the key (or an escape); a longer second array puts the first one's end inside an earlier
    # piece, which then fails to decode
    first = json.dumps({"traceEvents": _kernels(60)})[:-1]
    text = first + f', "{key}": ' + json.dumps(_kernels(second, 5000.0)) + "}"
    path = _write(tmp_path, text)
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=parts)
    assert seen == [None] and len(got.ops) == second


def test_a_cut_whose_separator_is_no_json_whitespace_is_not_a_cut(tmp_path, monkeypatch, pieces):
    # a regex's \s takes form feeds, JSON does not: a form feed where a piece would be cut
    # leaves the document malformed, whole or in pieces
    doc = bytearray(json.dumps({"traceEvents": _kernels(60)}).encode())
    spans = split.bounds(doc, max(2, -(-len(doc) // split.PIECE_BYTES)))
    assert spans is not None and len(spans) > 2
    for _, hi in spans[:-1]:
        assert doc[hi:hi + 2] == b", "
        doc[hi + 1] = 0x0C
    path = tmp_path / "trace.json"
    path.write_bytes(bytes(doc))
    with pytest.raises(TraceError, match="malformed JSON"):
        load_kineto(path, parts=1)


def test_a_key_that_only_ends_in_the_events_name_is_not_the_events(tmp_path, monkeypatch, pieces):
    text = '{"x\\"traceEvents": ' + json.dumps(_kernels(60)) + "}"
    path = _write(tmp_path, text)
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=2)
    assert seen == [None] and len(got.ops) == 0


def test_epoch_times_after_metadata_in_a_later_piece_still_count(tmp_path, monkeypatch, pieces):
    meta = [{"ph": "M", "name": "process_name", "pid": i, "args": {"name": "x" * 40}}
            for i in range(200)]  # no times: the first pieces hold none
    late = [_launch(f"TS1700000000{i:06d}.001", i) for i in range(100)] + \
        [_event("k", f"TS1700000000{i:06d}.203", i) for i in range(100)]
    text = re.sub(r'"TS([0-9.]+)"', r"\1", json.dumps({"traceEvents": meta + late}))
    path = _write(tmp_path, text)
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=3)
    assert seen == [None]
    assert int(got.ops.start_ns[-1]) == 1_700_000_000_000_099_203


def test_a_process_with_threads_scans_in_itself(monkeypatch):
    import threading
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert split.processes(split.SPLIT_MIN_BYTES, None) == 1
    finally:
        stop.set()
        t.join()


def test_a_piece_process_that_dies_leaves_the_one_call_decode(tmp_path, monkeypatch, pieces):
    path = _write(tmp_path, json.dumps({"traceEvents": _kernels(300)}))
    real = split.run

    def dying(src, spans, j0, j1, rx, tick=None):
        if j0 > 0:  # the second process dies as if killed for memory
            os._exit(9)
        return real(src, spans, j0, j1, rx, tick)
    monkeypatch.setattr(split, "run", dying)
    seen = _split_ran(monkeypatch)
    got = load_kineto(path, parts=2)
    assert seen == [None] and len(got.ops) == 300


@pytest.mark.parametrize("parts", [1, 3])
def test_progress_counts_every_byte_once(tmp_path, pieces, parts):
    path = _write(tmp_path, json.dumps({"traceEvents": _kernels(300)}))
    src = split.open_plain(path)
    ticks: list[int] = []
    try:
        assert split.scan(src, None, parts, ticks.append) is not None
    finally:
        src.close()
    assert sum(ticks) == path.stat().st_size and len(ticks) > 3
