"""Readers for real engine outputs: vllm bench serve/latency/throughput JSON, vLLM and SGLang logs."""
from __future__ import annotations

import shutil

import pytest

from collectors.engines.ingest import ingest
from collectors.engines.logs import parse_log
from collectors.engines.vllm import EngineOutputError
from tests.conftest import DATA

E = DATA / "engines"


def test_serve_result_maps_to_metrics():
    (rec,), _ = ingest([E / "serve.json"])
    m = rec["metrics"]
    assert m["tok_s"]["samples"] == [88.94] and m["tok_s"]["direction"] == "higher"
    assert m["total_tok_s"]["samples"] == [800.5]
    assert m["req_s"]["samples"] == [0.695]
    assert m["ttft_ms_median"]["samples"] == [118.2] and m["ttft_ms_median"]["direction"] == "lower"
    assert m["tpot_ms_mean"]["samples"] == [11.31] and m["itl_ms_p99"]["samples"] == [12.9]
    assert rec["config"]["concurrency"] == 1 and rec["config"]["request_rate"] == "inf"
    assert rec["benchmark"] == "vllm-serve-GLM-4.6"
    assert rec["started_at"] == "2026-11-28T10:15:00Z"


def test_jsonl_sweep_is_one_run_per_configuration():
    recs, _ = ingest([E / "sweep.jsonl"], benchmark="glm")
    assert len(recs) == 2
    by = {r["config"]["concurrency"]: r["metrics"]["tok_s"]["samples"] for r in recs}
    assert by == {1: [88.1, 88.5], 4: [301.2, 299.8]}


def test_zero_completed_is_refused():
    with pytest.raises(EngineOutputError, match="no request completed"):
        ingest([E / "serve_zero.json"])


def test_latency_with_commands_file():
    (rec,), _ = ingest([E / "latency.json"])
    assert rec["metrics"]["latency_s"]["samples"] == [1.50, 1.52, 1.54, 1.51]
    assert rec["config"]["batch_size"] == 8 and rec["config"]["output_len"] == 128
    assert rec["metrics"]["tok_s"]["samples"][0] == pytest.approx(8 * 128 / 1.50)


def test_latency_without_lengths_has_no_tok_s(tmp_path):
    p = tmp_path / "lat.json"
    shutil.copy(E / "latency.json", p)
    (rec,), _ = ingest([p])
    assert "tok_s" not in rec["metrics"]
    (rec,), _ = ingest([p], batch_size=2, output_len=10)
    assert rec["metrics"]["tok_s"]["samples"][1] == pytest.approx(20 / 1.52)


def test_throughput_is_total_not_output():
    (rec,), _ = ingest([E / "throughput.json"])
    assert "tok_s" not in rec["metrics"]
    assert rec["metrics"]["total_tok_s"]["samples"] == [31400.0]
    assert rec["metrics"]["req_s"]["samples"] == [25.0]


def test_vllm_merged_log_with_colours():
    f = parse_log(E / "vllm_merged.log")
    assert f.engine == "vllm" and f.kv_capacity_tokens == 578368 and not f.kv_derived
    assert f.kv_max_concurrency == pytest.approx(70.60)


def test_vllm_split_ranks_take_minimum_and_warn():
    f = parse_log(E / "vllm_split.log")
    assert f.kv_capacity_tokens == 578112
    assert f.warnings and "minimum" in f.warnings[0]


def test_old_vllm_blocks_derive_capacity():
    f = parse_log(E / "vllm_old.log")
    assert f.kv_capacity_tokens == 18074 * 32 and f.kv_derived


def test_sglang_prefers_scheduler_figure():
    assert parse_log(E / "sglang.log").kv_capacity_tokens == 1198720
    assert parse_log(E / "sglang_alloc_only.log").kv_capacity_tokens == 401000


def test_log_beside_result_joins_its_run():
    (rec,), _ = ingest([E / "serve.json", E / "vllm_merged.log"])
    assert rec["metrics"]["kv_capacity_tokens"]["samples"] == [578368]
    assert rec["metrics"]["tok_s"]["samples"] == [88.94]


def test_log_alone_is_a_run():
    (rec,), _ = ingest([E / "sglang.log"], benchmark="sgl")
    assert rec["benchmark"] == "sgl" and list(rec["metrics"]) == ["kv_capacity_tokens"]


@pytest.mark.parametrize("content,match", [
    ("", "empty file"), ("{not json", "line 1 is not valid JSON"),
    ('{"foo": 1}', "neither a vllm bench result"), ("[1, 2]", "not a vllm bench result"),
    ('{"output_throughput": "fast", "completed": 3, "request_throughput": 1}', "output_throughput"),
    ('{"latencies": [1.0, -2], "avg_latency": 1}', "latencies"),
])
def test_broken_and_partial_files(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(EngineOutputError, match=match):
        ingest([p])


def test_unrelated_text_is_refused():
    with pytest.raises(EngineOutputError, match="not a vllm bench result"):
        ingest([E / "unrelated.log"])


def test_truncated_jsonl(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text((E / "sweep.jsonl").read_text()[:-40])
    with pytest.raises(EngineOutputError, match="line 4"):
        ingest([p])


def test_a_sweeps_server_settings_are_config_and_request_counts_are_metrics(tmp_path):
    import json

    row = json.loads((DATA / "engines" / "sweep.jsonl").read_text().splitlines()[0])
    sweep = tmp_path / "summary.jsonl"
    rows = [{**row, "max_num_seqs": seqs, "max_num_batched_tokens": 2048, "failed": failed,
             "completed": 64 - failed} for seqs, failed in ((32, 0), (64, 2))]
    sweep.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    recs, _ = ingest([sweep])
    assert [(r["config"]["max_num_seqs"], r["config"]["max_num_batched_tokens"]) for r in recs] == [
        (32, 2048), (64, 2048)]
    assert [r["metrics"]["failed_requests"]["samples"] for r in recs] == [[0.0], [2.0]]
    assert [r["metrics"]["completed_requests"]["samples"] for r in recs] == [[64.0], [62.0]]
    assert recs[0]["config"]["model"] == "zai-org/GLM-4.6"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**row, "failed": -1}))
    with pytest.raises(EngineOutputError, match="field failed is not a request count"):
        ingest([bad])


def test_a_renamed_copy_is_the_same_record(tmp_path):
    first = tmp_path / "a" / "serve.json"
    first.parent.mkdir()
    shutil.copy(DATA / "engines" / "serve.json", first)
    second = tmp_path / "results-nightly.json"
    shutil.copy(first, second)
    (a,), _ = ingest([first])
    (b,), _ = ingest([second])
    assert a == b and a["source"]["sha256"] and "file" not in a["source"]
