"""Engine identity on ingest (spec/api.md, `perfwarden ingest`): command-line flags win,
stored command lines give canonical keys, CI and nvidia-smi give commit and GPU, and what cannot
be known is said."""
from __future__ import annotations

import json
import os
import stat

import pytest

from collectors.engines.ingest import Identity, ingest
from tests.conftest import DATA

SERVE = json.loads((DATA / "engines" / "serve.json").read_text())


def write(tmp_path, name, obj, commands=None):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    if commands:
        p.with_name(p.name + ".commands").write_text(commands)
    return p


@pytest.fixture
def fake_gpu_node(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do echo 'NVIDIA H200'; done\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GITHUB_SHA", "6420fe5c0ffee1234567890abcdef")
    monkeypatch.setenv("GITHUB_REF_NAME", "fix/moe-order")


def test_stored_command_line_gives_canonical_keys(tmp_path, fake_gpu_node):
    p = write(tmp_path, "serve.json", SERVE, commands=(
        "vllm bench serve --model zai-org/GLM-4.6 -tp 8 --random-input-len 1024 "
        "--random-output-len 128 --max-concurrency 1 --dtype bfloat16"))
    (rec,), warnings = ingest([p], identity=Identity())
    cfg = rec["config"]
    assert cfg["tp"] == 8 and cfg["input_len"] == 1024 and cfg["output_len"] == 128
    assert cfg["concurrency"] == 1 and cfg["dtype"] == "bfloat16"
    assert rec["hardware"] == {"gpu": "NVIDIA H200", "gpu_count": 8}
    assert rec["commit"] == "6420fe5c0ffee1234567890abcdef" and rec["branch"] == "fix/moe-order"
    assert warnings == []


def test_command_line_flags_win(tmp_path, fake_gpu_node):
    p = write(tmp_path, "serve.json", SERVE, commands="vllm bench serve -tp 8")
    ident = Identity(config={"tp": 4, "mtp": 0}, commit="abc1234", branch="main", gpu="NVIDIA H100",
                     gpu_count=4, repository="acme/engine", pr=150)
    (rec,), _ = ingest([p], benchmark="glm52-decode", label="pr-150", identity=ident)
    assert rec["benchmark"] == "glm52-decode" and rec["label"] == "pr-150"
    assert rec["config"]["tp"] == 4 and rec["config"]["mtp"] == 0
    assert rec["hardware"] == {"gpu": "NVIDIA H100", "gpu_count": 4}
    assert (rec["commit"], rec["branch"], rec["repository"], rec["pr"]) == (
        "abc1234", "main", "acme/engine", 150)
    # a perfwarden record names its own benchmark and label: the command line still wins
    own = write(tmp_path, "run.json", [{**rec, "label": "old", "benchmark": "old"}])
    (again,), _ = ingest([own], benchmark="new", label="pr-151", identity=Identity())
    assert again["benchmark"] == "new" and again["label"] == "pr-151"


def test_unknown_identity_is_in_the_series_and_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, no git
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    p = write(tmp_path, "serve.json", SERVE)
    (rec,), warnings = ingest([p], identity=Identity())
    assert "gpu" not in (rec.get("hardware") or {})
    assert rec["config"]["unknown"] == "tp,gpu,gpu_count"
    (line,) = warnings
    assert "tp, gpu, gpu_count unknown" in line
    assert line.endswith("(give --config tp=... --gpu --gpu-count)")
    (known,), warnings = ingest([p], identity=Identity(config={"tp": 1}, gpu="NVIDIA H200",
                                                       gpu_count=1))
    assert "unknown" not in known["config"] and warnings == []


def test_latency_only_serve_result_gives_latency_metrics(tmp_path):
    only = {k: v for k, v in SERVE.items() if "_ms" in k or k in ("date", "model_id")}
    only.update({"mean_e2el_ms": 9120.4, "p99_e2el_ms": 9388.0})
    (rec,), _ = ingest([write(tmp_path, "nightly.json", only)])
    assert set(rec["metrics"]) == {"ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "tpot_ms_mean",
                                   "tpot_ms_median", "tpot_ms_p99", "itl_ms_mean", "itl_ms_median",
                                   "itl_ms_p99", "e2el_ms_mean", "e2el_ms_p99"}
    assert rec["metrics"]["e2el_ms_mean"]["direction"] == "lower"


def test_old_vllm_cuda_blocks_log_is_read(tmp_path):
    log = tmp_path / "old.log"
    log.write_text("INFO llm_engine.py:100] Initializing an LLM engine with config: block_size=16\n"
                   "INFO worker.py:120] # CUDA blocks: 2048, # CPU blocks: 512\n")
    (rec,), warnings = ingest([log])
    assert rec["metrics"]["kv_capacity_tokens"]["samples"] == [2048 * 16]
    assert any("derived as # GPU/CUDA blocks 2,048 x block size 16" in w for w in warnings)


def test_trials_pool_result_files_into_one_run(tmp_path):
    files = [write(tmp_path, f"r{i}.json", {**SERVE, "output_throughput": 88.0 + i})
             for i in range(3)]
    records, _ = ingest(files, benchmark="glm")
    assert len(records) == 3
    (one,), _ = ingest(files, benchmark="glm", trials=True)
    assert one["metrics"]["tok_s"]["samples"] == [88.0, 89.0, 90.0]


def test_sglang_bench_serving_result():
    """SGLang's bench_serving line (fields as its writer names them: `*_e2e_latency_ms`,
    `total_throughput`, `Infinity` for an unbounded rate; the values are made up)."""
    (rec,), _ = ingest([DATA / "engines" / "sglang_bench_serving.jsonl"])
    assert rec["benchmark"] == "sglang-serve"
    m = rec["metrics"]
    assert m["tok_s"]["samples"] == [87.71] and m["total_tok_s"]["samples"] == [789.4]
    assert m["e2el_ms_mean"] == {"unit": "ms", "direction": "lower", "samples": [1458.3]}
    assert m["e2el_ms_p90"]["samples"] == [1466.0] and m["itl_ms_p95"]["samples"] == [11.1]
    assert rec["config"]["input_len"] == 1024 and rec["config"]["request_rate"] == "inf"


def test_server_logs_name_the_engine_settings():
    from collectors.engines.identity import server_config

    sglang = ("[2026-11-28 10:00:00] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', "
              "tokenizer_path='deepseek-ai/DeepSeek-V3', dtype='auto', kv_cache_dtype='fp8_e5m2', "
              "quantization=None, tp_size=8, pp_size=1, dp_size=2, ep_size=8, "
              "speculative_algorithm='EAGLE', speculative_num_steps=3, "
              "speculative_num_draft_tokens=4, json_model_override_args='{}')")
    assert server_config(sglang)[0] == {"model": "deepseek-ai/DeepSeek-V3", "tp": 8, "dp": 2, "ep": 8,
                                     "kv_cache_dtype": "fp8_e5m2", "speculative": "EAGLE:4"}
    vllm = ("(APIServer pid=1) INFO 11-28 09:59:50 [utils.py:233] non-default args: {'model': "
            "'zai-org/GLM-4.6', 'tensor_parallel_size': 4, 'data_parallel_size': 2, "
            "'enable_expert_parallel': True, 'speculative_config': {'method': 'mtp', "
            "'num_speculative_tokens': 1}}")
    assert server_config(vllm)[0] == {"model": "zai-org/GLM-4.6", "tp": 4, "dp": 2, "ep": 8,
                                   "speculative": "mtp:1"}
    assert server_config("nothing here") == ({}, {})


def test_the_commit_is_never_the_current_directorys_for_a_file_outside_it(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.delenv("GITHUB_SHA", raising=False)
    monkeypatch.delenv("PERFWARDEN_BISECT", raising=False)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # this project's own checkout
    p = write(tmp_path, "serve.json", SERVE)  # a folder that no repository holds
    (rec,), _ = ingest([p], identity=Identity())
    assert "commit" not in rec
    monkeypatch.setenv("GITHUB_SHA", "a" * 40)
    (rec,), _ = ingest([p], identity=Identity())
    assert rec["commit"] == "a" * 40
    (rec,), _ = ingest([p], identity=Identity(commit="b" * 40))
    assert rec["commit"] == "b" * 40
