"""The C filter (collectors/traces/_kfilter.c) gives the columns msgspec's typed decode gives:
on documents built with the odd fields the format allows (any phase, category case, missing
and mistyped fields, escapes, epoch times, extra nesting), read in one call and a piece at a
time; it never takes text that msgspec refuses as JSON; and on text it does not take it answers
None quickly, whatever the input, so the usual decode decides."""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

import msgspec
import pytest

from collectors.traces import kineto_events as ev
from collectors.traces import kineto_scan as ks
from collectors.traces import kineto_split as split
from collectors.traces.kineto import load_kineto
from tests.collectors.test_kineto_paths import TRACES, _columns


def test_the_filter_is_built_and_reads_the_real_captures():
    assert ev._keep is not None, "setup.py builds collectors/traces/_kfilter.c"
    for path in TRACES:
        got = ev.decode_filtered(ev_bytes(path), True, ks.BATCH, False)
        assert got is not None, path.name
        assert got[0].o_ts or got[0].c_ts, path.name


def ev_bytes(path: Path) -> bytes:
    from collectors.traces.kineto import read_bytes
    return bytes(read_bytes(path))


def test_its_categories_are_the_scans():
    cats = ev.CATEGORIES
    assert set(cats) == set(ks.OP_CATS) | ks.CALL_CATS | ks.RANGE_CATS | ks.SYNC_CATS
    # the filter tells the kinds apart by place: ops, then calls, then ranges, then syncs
    assert [c in ks.OP_CATS for c in cats[:5]] == [True] * 5
    assert [c in ks.CALL_CATS for c in cats[5:9]] == [True] * 4
    assert [c in ks.RANGE_CATS for c in cats[9:11]] == [True] * 2
    assert cats[11:] == ("cuda_sync",)


CATS = ["kernel", "Kernel", "KERNEL", "gpu_memcpy", "Memset", "memcpy", "cuda_runtime",
        "CUDA_Driver", "runtime", "driver", "user_annotation", "operator", "cuda_sync",
        "cpu_op", "gpu_user_annotation", "python_function", "", "\u212aernel", "kérnel"]


def _value(r: random.Random, kind: str):
    pick = r.random()
    if kind == "time":
        return (r.uniform(0, 1e7) if pick < 0.7 else r.randint(0, 10**6) if pick < 0.8
                else r.choice([1.7e15 + r.random(), "123.5", "x", None, -1.5, 0, 1.5e-7, 5e-5,
                               -2.5e-5]))
    if kind == "id":
        return (r.randint(0, 9) if pick < 0.7 else r.choice(["Traces", "", "7", -1, 2.5, None,
                                                            10**20]))
    if kind == "arg":
        return (r.randint(0, 40) if pick < 0.8 else r.choice([-1, "3", None, 1.0, True,
                                                             10**19, [1]]))
    return r.choice(["k0", "k1", "step#1", "ProfilerStep#2", "decode_step", "ä\u00e9\"\\/",
                     "\x01x", "traceEvents", "a" * 300, 5, None])


def _event(r: random.Random) -> dict:
    e: dict = {}
    keys = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "s"]
    r.shuffle(keys)
    for k in keys:
        if r.random() < (0.12 if k in ("ph", "ts") else 0.2):
            continue  # a missing field
        if k == "ph":
            e[k] = r.choice(["X"] * 6 + ["i", "M", "s", "f", "", "x", 5])
        elif k == "cat":
            e[k] = r.choice(CATS * 3 + [None, 1])
        elif k == "name":
            e[k] = _value(r, "name")
        elif k in ("pid", "tid"):
            e[k] = _value(r, "id")
        elif k in ("ts", "dur"):
            e[k] = _value(r, "time")
        elif k == "args":
            if r.random() < 0.1:
                e[k] = r.choice([None, [], "x"])
                continue
            a = {}
            for ak in ("device", "stream", "correlation", "wait_on_stream",
                       "wait_on_cuda_event_record_corr_id", "External id", "grid"):
                if r.random() < 0.8:
                    a[ak] = _value(r, "arg") if ak != "grid" else [1, {"x": [2, {}]}, "}"]
            e[k] = a
        else:
            e[k] = r.choice([1, "e", {"nested": [1, 2, {"k": "v"}]}, True, None])
    return e


def _document(r: random.Random, n: int) -> str:
    events = [_event(r) for _ in range(n)]
    if r.random() < 0.5:  # plain events of every kind, as real traces hold
        for k, e in enumerate(events):
            e.clear()
            e.update(ph=r.choice(["X"] * 8 + ["i", "M", "s", "f"]), cat=r.choice(CATS[:17]),
                     name=r.choice(["k0", "k1", "ProfilerStep#1", "a\u00e9", "step"]),
                     pid=r.choice([1, 2, "Traces"]), tid=r.choice([2, 3, "PyTorch"]),
                     ts=r.uniform(0, 1e6), dur=r.uniform(0, 10),
                     args={"device": r.choice([0, 1]), "stream": r.choice([7, -1]),
                           "correlation": r.randint(1, 50), "External id": k,
                           "Input Dims": [[1, 2], []]})
            if r.random() < 0.1:
                del e["args"]["correlation"]
    doc = {"schemaVersion": 1, "traceEvents": events, "tail": {"x": [1, 2]}}
    text = json.dumps(doc, indent=r.choice([None, 1, 2]), ensure_ascii=r.random() < 0.5)
    return text


@pytest.mark.parametrize("pieces", [False, True], ids=["one call", "pieces"])
def test_generated_documents_give_msgspecs_columns(tmp_path, monkeypatch, pieces):
    r = random.Random(7)
    if pieces:
        monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 0)
        monkeypatch.setattr(split, "PIECE_BYTES", 1500)
    taken = refused = 0
    real = ev._keep

    def spy(*a):
        nonlocal taken, refused
        got = real(*a)
        taken += got is not None
        refused += got is None
        return got
    monkeypatch.setattr(ev, "_keep", spy)
    for k in range(300):
        path = tmp_path / f"doc{k}.json"
        path.write_text(_document(r, r.randint(1, 60)))
        rx = r.choice([None, r"ProfilerStep#\d+", "step"])
        try:
            with monkeypatch.context() as m:
                m.setattr(ev, "_keep", None)
                want = _columns(load_kineto(path, rx, parts=1))
        except Exception as e:  # noqa: BLE001 - then both must refuse it the same way
            with pytest.raises(type(e)):
                load_kineto(path, rx, parts=1)
            continue
        got = _columns(load_kineto(path, rx, parts=1))  # pieces in this process (the spy counts)
        for key in want:
            assert got[key] == want[key], (k, key)
    assert taken >= 60 and refused >= 60, (taken, refused)  # both ways were tried


def test_it_never_takes_text_msgspec_refuses():
    """Random edits of a document: whatever the filter takes, msgspec's typed decode (which,
    like the filter, checks the syntax of the fields it skips but not their UTF-8) reads as
    JSON."""
    r = random.Random(11)
    base = next(t for t in (_document(random.Random(k), 25).encode() for k in range(100))
                if ev._keep(t, True, 0, False) is not None)
    alphabet = b'{}[]",:\\ \n0123456789.-eEtrufalsnud\x01\xff'
    taken = 0
    for _ in range(4000):
        b = bytearray(base)
        for _ in range(r.randint(1, 3)):
            at = r.randrange(len(b))
            op = r.random()
            if op < 0.4:
                b[at] = r.choice(alphabet)
            elif op < 0.7:
                del b[at]
            else:
                b.insert(at, r.choice(alphabet))
        if ev._keep(bytes(b), True, r.choice([0, 5]), False) is not None:
            taken += 1
            try:  # the typed decode of the usual path: DecodeError where the text is no JSON
                ev.DOC.decode(bytes(b))
            except msgspec.ValidationError:
                pass  # a type the usual path reads another way: not a question of syntax
    assert taken > 100


@pytest.mark.parametrize("text", [
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "ts": 2}]}',  # a key twice
    b'{"traceEvents": [{"p\\u0068": "X"}]}',  # an escaped key
    b'{"traceEvents": [{"ph": "\\u0058"}]}',  # an escaped phase
    b'{"traceEvents": [{"ph": "X", "cat": "\\u212aernel"}]}',  # lowers to "kernel"
    b'{"traceEvents": [], "traceEvents": [{"ph": "X"}]}',  # a second events key
    b'{"traceEvents": [1]}',  # an element that is no event
    b'{"traceEvents": {}}',
    b'{"other": []}',
    b'[{"ph": "X"}] x',
    b'[{"ph": "X"},]',
    b'[{"ph": "X", "args": {"a": 01}}]',
    b'[{"ph": "X", "args": {"a": "\\q"}}]',
    b'[{"ph": "X", "args": {"a": tru}}]',
    b'[{"ph": "X", "args": {"a": [1,]}}]',
    b'[{"ph": "X", "name": "a\x01"}]',
    b'[{"ph": "X"}',
    b'{"traceEvents": [{"ph": "i", "cat": "\\ud800"}]}',  # a lone high surrogate
    b'{"x": "\\udc00", "traceEvents": []}',  # a lone low one, outside the events
    b'{"traceEvents": [{"ph": "i", "foo": "\\ud800\\u0041"}]}',  # high, then no low
    b'[{"ph": "X", "cat": "cpu_op", "pid": 1.5}]',  # types the typed decode refuses...
    b'[{"ph": "i", "ts": 1e400}]',
    b'[{"ph": "i", "ts": -1E+400}]',
    b'[{"ph": "X", "cat": "kernel", "dur": 2.5e-999}]',
    b'[{"ph": "X", "cat": "cpu_op", "args": [1]}]',
    b'[{"ph": "X", "cat": "cpu_op", "args": {"device": 1.5}}]',
    b'[{"ph": "i", "cat": null}]',  # ...even on events analysis never reads
])
def test_it_leaves_odd_or_broken_text_to_the_usual_decode(text):
    assert ev._keep(text, text.lstrip()[:1] == b"{", 0, False) is None


def test_a_skipped_event_of_odd_type_leaves_the_document_to_the_usual_path(tmp_path,
                                                                          monkeypatch):
    """An event the typed decode refuses sends the usual path to the standard library's json,
    which reads other things another way too (names that are numbers, epoch times anywhere):
    the filter leaves such a document whole to it, so the columns are the usual path's."""
    text = ('[{"ph": "X", "cat": "cpu_op", "pid": 1.5, "ts": 1, "dur": 1},'
            '{"ph": "X", "cat": "kernel", "name": 1E2, "ts": 2, "dur": 1, "args": {"device": 0,'
            ' "stream": 7, "correlation": 1}}, {"ph": "X", "cat": "user_annotation", '
            '"name": [1,2], "ts": 2, "dur": 5, "pid": 1, "tid": 1}]')
    path = tmp_path / "odd.json"
    path.write_text(text)
    assert ev._keep(text.encode(), False, 0, False) is None
    assert ev.decode_filtered(text.encode(), False, 0, False) is None
    got = _columns(load_kineto(path))
    monkeypatch.setattr(ev, "_keep", None)
    assert got == _columns(load_kineto(path)) and got["ops.start_ns"] == [2000]


@pytest.mark.serial
def test_no_input_stalls_it():
    """Nesting far past its depth, a long string, and many distinct names: each answered at
    once, in time linear in the input."""
    cases = [b"[" * 2_000_000, b'[{"ph": "i", "args": ' + b"[" * 1_000_000 + b"]" * 1_000_000
             + b"}]", b'[{"ph": "X", "name": "' + b"a" * 50_000_000 + b'"}]',
             ("[" + ",".join(f'{{"ph": "X", "cat": "kernel", "name": "k{i}", "ts": {i}, '
                             f'"dur": 1, "args": {{"device": 0, "stream": 7, '
                             f'"correlation": {i}}}}}' for i in range(300_000)) + "]").encode()]
    for text in cases:
        t = time.perf_counter()
        ev._keep(text, False, 0, False)
        assert time.perf_counter() - t < 2.0
    got = ev.decode_filtered(cases[-1], False, 0, False)
    assert got is not None and len(got[0].names) == 300_000
