"""`perfwarden ingest RESULT [LOG] --trace FILE|DIR` (spec/api.md, Engine traces at ingest): which
files of
an engine's profiler folder become the run's trace set, in rank order, and how they travel."""
from __future__ import annotations

import gzip
import json
import shutil

import pytest

from collectors.cli import main as cli_main
from collectors.engines.traces import trace_set
from collectors.engines.vllm import EngineOutputError
from tests.conftest import DATA, H200

CAPTURE = H200 / "engines" / "torch-joined-eager.json.gz"


# the smallest Kineto trace: one kernel span
ONE_EVENT = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                              "ts": 1.0, "dur": 2.0}]}


def _touch(d, *names):
    for n in names:
        data = json.dumps(ONE_EVENT).encode()
        (d / n).write_bytes(gzip.compress(data) if n.endswith(".gz") else data)


def test_vllm_folder_in_rank_order(tmp_path):
    _touch(tmp_path, "dp0_pp0_tp1_rank1.1764.pt.trace.json.gz", "dp0_pp0_tp0_rank0.1764.pt.trace.json.gz",
           "profiler_out_0.txt", "results.json")
    assert [p.name for p in trace_set([tmp_path])] == [
        "dp0_pp0_tp0_rank0.1764.pt.trace.json.gz", "dp0_pp0_tp1_rank1.1764.pt.trace.json.gz"]


def test_sglang_folder_takes_the_decode_files(tmp_path):
    _touch(tmp_path, "1764-TP-1-decode.trace.json.gz", "1764-TP-0-decode.trace.json.gz",
           "1764-TP-0-prefill.trace.json.gz", "1764-TP-1-prefill.trace.json.gz")
    assert [p.name for p in trace_set([tmp_path])] == [
        "1764-TP-0-decode.trace.json.gz", "1764-TP-1-decode.trace.json.gz"]


def test_nsys_export_beside_its_report(tmp_path):
    _touch(tmp_path, "run.nsys-rep", "run.sqlite", "other.nsys-rep")
    assert [p.name for p in trace_set([tmp_path])] == ["other.nsys-rep", "run.sqlite"]


def test_empty_folder_and_missing_path(tmp_path):
    with pytest.raises(EngineOutputError, match="no trace files"):
        trace_set([tmp_path])
    with pytest.raises(EngineOutputError, match="no such file or folder"):
        trace_set([tmp_path / "nope"])


def test_ingest_out_copies_the_trace_set_beside_the_record(tmp_path, capsys):
    prof = tmp_path / "vllm-profile"
    prof.mkdir()
    shutil.copy(CAPTURE, prof / "rank0.pt.trace.json.gz")
    out = tmp_path / "rec" / "runs.json"
    rc = cli_main(["ingest", str(DATA / "engines" / "serve.json"),
                   str(DATA / "engines" / "vllm_merged.log"), "--trace", str(prof),
                   "--gpu", "NVIDIA H200", "--no-detect", "--out", str(out)])
    assert rc == 0
    rec = json.loads(out.read_text())[0]
    assert rec["trace_files"] == ["traces/rank0.pt.trace.json.gz"]
    assert (out.parent / "traces" / "rank0.pt.trace.json.gz").read_bytes() == CAPTURE.read_bytes()
    assert rec["metrics"]["kv_capacity_tokens"]["samples"] == [578368]
    assert "trace set: 1 file(s)" in capsys.readouterr().err


def test_ingest_trace_needs_one_run(tmp_path, capsys):
    rc = cli_main(["ingest", str(DATA / "engines" / "sweep.jsonl"), "--trace", str(CAPTURE),
                   "--no-detect"])
    assert rc == 65
    assert "attaches a trace set to one run" in capsys.readouterr().err


def test_rank_files_of_one_capture_are_one_set_and_other_phases_are_apart(tmp_path):
    from collectors.engines.traces import attach, trace_groups

    names = ["1764583200.1-TP-1-decode.trace.json.gz", "1764583200.1-TP-0-decode.trace.json.gz",
             "1764583200.1-TP-0-prefill.trace.json.gz"]
    _touch(tmp_path, *names)
    groups = trace_groups([tmp_path / n for n in names])
    assert [(ph, [p.name for p in g]) for ph, g in groups] == [
        ("decode", [names[1], names[0]]), ("prefill", [names[2]])]
    rec = [{"benchmark": "b"}]
    (note,) = attach(rec, [tmp_path / n for n in names])
    # every file attached: the decode set first (the run's own trace), then the prefill trace
    assert [p.split("/")[-1] for p in rec[0]["trace_files"]] == [names[1], names[0], names[2]]
    assert rec[0]["trace_groups"] == [{"phase": "decode", "files": 2},
                                      {"phase": "prefill", "files": 1}]
    assert "2 traces of this run" in note and "beside it prefill " + names[2] in note


def test_a_rank_seen_again_is_a_later_capture(tmp_path):
    from collectors.engines.traces import trace_groups

    names = ["dp0_pp0_tp0_rank0.1764583200123.pt.trace.json.gz",
             "dp0_pp0_tp1_rank1.1764583200377.pt.trace.json.gz",
             "dp0_pp0_tp0_rank0.1764583900021.pt.trace.json.gz",
             "dp0_pp0_tp1_rank1.1764583900250.pt.trace.json.gz"]
    _touch(tmp_path, *names)
    groups = trace_groups([tmp_path / n for n in names])
    assert [[p.name for p in g] for _, g in groups] == [names[:2], names[2:]]
    # names with no rank in them: each file is a capture of its own
    assert len(trace_groups([tmp_path / "a.sqlite", tmp_path / "b.sqlite"])) == 2


def test_groups_of_a_record_follow_its_trace_groups():
    from collectors.engines.traces import groups_of

    assert groups_of({}, 0) == [] and groups_of({}, 2) == [(0, None), (0, None)]
    rec = {"trace_groups": [{"phase": "decode", "files": 2}, {"phase": "prefill", "files": 1}]}
    assert groups_of(rec, 3) == [(0, "decode"), (0, "decode"), (1, "prefill")]
    with pytest.raises(ValueError, match="name 3 file"):
        groups_of(rec, 2)
    with pytest.raises(ValueError, match=r"trace_groups\[0\]"):
        groups_of({"trace_groups": [{"files": 0}]}, 0)


@pytest.mark.parametrize("body", [{"files": ["a.json"], "traceEvents_note": "x"}, [{"file": "a"}],
                                  {"traceEvents": []},
                                  {"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}]}])
def test_a_file_without_trace_events_is_refused_before_anything_is_posted(tmp_path, capsys, body):
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(json.dumps(body))
    out = tmp_path / "rec.json"
    rc = cli_main(["ingest", str(DATA / "engines" / "serve.json"), "--trace", str(manifest),
                   "--no-detect", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 65 and not out.exists()
    assert err[-1] == f"error: --trace {manifest}: no trace events (a JSON file without " \
        "Kineto/Chrome trace events is not a trace)"
    assert cli_main(["analyze", str(manifest), "--quiet"]) == 65
    assert capsys.readouterr().err.strip() == f"error: {manifest}: no trace events (no kernel, " \
        "copy, runtime call or range): not a trace"
