"""What a server log says about the server: ranks from its prefixes, the model or its class, the
KV dtype, the settings that change the workload (config) and the rest (meta); a log of another
server than the result's is refused unless `--config` settles it."""
from __future__ import annotations

import json
import shutil

import pytest

from collectors.cli.ingest import _config
from collectors.engines.identity import config_value, server_config
from collectors.engines.ingest import Identity, ingest
from collectors.engines.vllm import EngineOutputError
from tests.conftest import DATA

S = DATA / "engines" / "servers"


def test_sglang_rank_prefixes_weight_line_and_kv_dtype():
    cfg, meta = server_config((S / "sglang_tp2_qwen3.log").read_text())
    assert cfg == {"tp": 2, "model": "Qwen3ForCausalLM", "dtype": "bfloat16"}  # bf16 KV: auto
    assert meta == {}
    cfg, _ = server_config((S / "sglang_swa_dp2.log").read_text())
    assert cfg == {"dp": 2, "tp": 2, "ep": 2, "model": "GptOssForCausalLM", "dtype": "bfloat16"}
    fp8 = "[2026-11-27 08:10:31 TP0] Using KV cache dtype: torch.float8_e4m3fn\n"
    assert server_config(fp8)[0]["kv_cache_dtype"] == "fp8_e4m3"
    # a rank kind that shows only rank 0 says nothing: the other ranks may not log
    assert "tp" not in server_config("[2026-11-27 08:10:31 TP0] Load weight begin.\n")[0]


def test_sglang_server_args_split_into_config_and_meta():
    cfg, meta = server_config((S / "sglang_tp4_eagle3.log").read_text())
    assert cfg == {"model": "meta-llama/Llama-3.1-70B-Instruct", "tp": 4, "dtype": "bfloat16",
                   "kv_cache_dtype": "fp8_e4m3", "chunked_prefill_size": 8192,
                   "speculative": "EAGLE3:4@jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-70B"}
    assert meta["mem_fraction_static"] == 0.85 and meta["attention_backend"] == "fa3"
    assert "page_size" not in meta and "block_size" not in cfg  # one token a page: the default


def test_vllm_worker_ranks_and_serving_settings():
    cfg, meta = server_config((S / "vllm_qwen7b_tp2.log").read_text())
    assert cfg == {"model": "Qwen/Qwen2.5-7B-Instruct", "max_num_seqs": 128, "tp": 2}
    assert meta["gpu_memory_utilization"] == 0.9
    cfg, meta = server_config((S / "vllm_gptoss120b_tp4.log").read_text())
    assert cfg["tp"] == 4 and cfg["quantization"] == "mxfp4"
    assert cfg["max_num_seqs"] == 256 and cfg["max_num_batched_tokens"] == 8192
    assert meta["async_scheduling"] is True and meta["enable_prefix_caching"] is True


def test_one_value_parser_for_the_command_line_and_the_logs():
    for text, want in [("8", 8), ("0.9", 0.9), ("True", True), ("false", False), ("none", None),
                       ("'fa3'", "fa3"), ("torch.bfloat16", "bfloat16"), ("inf", "inf"),
                       ("{'a': 1}", {"a": 1}), ("Qwen/Qwen3-32B", "Qwen/Qwen3-32B")]:
        assert config_value(text) == want, text
    assert _config(["tp=8", "model='Qwen/Qwen3-32B'", "eager=True", "rate=inf"]) == {
        "tp": 8, "model": "Qwen/Qwen3-32B", "eager": True, "rate": "inf"}


def test_a_log_of_another_model_or_tp_is_refused(tmp_path):
    for n in ("vllm_qwen7b_r1.json", "vllm_gptoss120b_tp4.log"):
        shutil.copy(S / n, tmp_path / n)
    files = [tmp_path / "vllm_qwen7b_r1.json", tmp_path / "vllm_gptoss120b_tp4.log"]
    with pytest.raises(EngineOutputError, match=r"the log's model=openai/gpt-oss-120b is not the "
                                                r"result's model=Qwen/Qwen2.5-7B-Instruct"):
        ingest(files)
    (rec,), _ = ingest(files, identity=Identity(config={"model": "Qwen/Qwen2.5-7B-Instruct"}))
    assert rec["config"]["model"] == "Qwen/Qwen2.5-7B-Instruct" and rec["config"]["tp"] == 4
    r = tmp_path / "r.json"
    r.write_text(json.dumps(json.loads(files[0].read_text()) | {"model_id": "openai/gpt-oss-120b"}))
    r.with_name("r.json.commands").write_text("vllm bench serve -tp 2")
    with pytest.raises(EngineOutputError, match=r"the log's tp=4 is not the result's tp=2"):
        ingest([r, files[1]])
    (rec,), _ = ingest([r, files[1]], identity=Identity(config={"tp": 4}))
    assert rec["config"]["tp"] == 4


def test_a_record_with_no_model_or_tp_names_the_flags():
    (rec,), warnings = ingest([S / "vllm_prodstack.log"])
    assert rec["config"] == {"unknown": "model,tp,gpu,gpu_count"}
    assert any("model, tp, gpu, gpu_count unknown" in w and
               "--config model=... --config tp=... --gpu --gpu-count" in w for w in warnings)
    (rec,), warnings = ingest([S / "vllm_prodstack.log"],
                              identity=Identity(config={"model": "m", "tp": 1}))
    assert not any("--config" in w for w in warnings)
