"""A server log read whole, and the one rule that makes a local model path the model's id."""
from __future__ import annotations

import pytest

from collectors.engines.identity import server_config
from collectors.engines.serverlog import model_id, tp_said, unwrap
from tests.conftest import DATA

CRAFTED = DATA / "engines" / "identity"


@pytest.mark.parametrize(("given", "model", "path"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", None),
    ("Qwen3ForCausalLM", "Qwen3ForCausalLM", None),
    ("/root/wl/cache/modelscope/models/LLM-Research/Meta-Llama-3-8B-Instruct",
     "Meta-Llama-3-8B-Instruct", "/root/wl/cache/modelscope/models/LLM-Research/Meta-Llama-3-8B-Instruct"),
    ("/root/.cache/modelscope/hub/LLM-Research/Meta-Llama-3-8B-Instruct/",
     "Meta-Llama-3-8B-Instruct", "/root/.cache/modelscope/hub/LLM-Research/Meta-Llama-3-8B-Instruct/"),
    ("/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B-Instruct/snapshots/a09a35458c70",
     "Qwen/Qwen2.5-7B-Instruct",
     "/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B-Instruct/snapshots/a09a35458c70"),
    ("./models/opt-125m", "opt-125m", "./models/opt-125m"),
    ("~/weights/gpt-oss-120b", "gpt-oss-120b", "~/weights/gpt-oss-120b"),
])
def test_a_local_path_becomes_the_models_id(given, model, path):
    assert model_id(given) == (model, path)


def test_a_hard_wrapped_settings_line_is_joined_before_it_is_read():
    text = (CRAFTED / "vllm_eagle3_wrapped.log").read_text()
    assert "tensor_parallel_si\nze=1" in text
    assert "tensor_parallel_size=1" in unwrap(text)
    without_ranks = "\n".join(line for line in text.splitlines() if "world size" not in line)
    config, meta = server_config(without_ranks)
    assert config["tp"] == 1 and config["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert config["speculative"] == "eagle3:3@yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert meta["model_path"].endswith("snapshots/0e9e39f249a16976918f6564b8830bc894c89659")


def test_a_record_start_ends_the_continuation():
    text = ("INFO 11-30 14:02:25 [core.py:74] non-default args: {'model': 'm', 'tensor_parallel_\n"
            "size': 4}\nINFO 11-30 14:02:26 [x.py:1] next record\n")
    assert unwrap(text).splitlines() == [
        "INFO 11-30 14:02:25 [core.py:74] non-default args: {'model': 'm', 'tensor_parallel_size': 4}",
        "INFO 11-30 14:02:26 [x.py:1] next record"]
    assert server_config(text)[0] == {"model": "m", "tp": 4}


@pytest.mark.parametrize(("line", "tp"), [
    ("INFO 11-30 14:02:27 [parallel_state.py:1134] rank 0 in world size 4 is assigned as DP "
     "rank 0, PP rank 0, TP rank 0, EP rank 0", 4),
    ("DEBUG 06-01 10:00:00 [parallel_state.py:900] world_size=8 rank=0 local_rank=0 "
     "distributed_init_method=tcp://127.0.0.1:29500 backend=nccl", 8),
    ("INFO 06-01 10:00:00 [model_runner.py:1] Capturing cudagraphs for decoding (tp=2)", 2),
    ("INFO 06-01 10:00:00 [x.py:1] nothing about the ranks", None),
])
def test_tp_from_the_lines_a_start_prints(line, tp):
    assert tp_said(line) == tp


def test_world_size_over_data_and_pipeline_parallel():
    assert tp_said("rank 0 in world size 8 is assigned as DP rank 0", pp=1, dp=2) == 4


def test_a_closed_settings_line_takes_no_continuation():
    text = ("INFO 11-30 14:02:25 [utils.py:233] non-default args: {'model': 'm'}\n"
            "Loading safetensors checkpoint shards: 100% Completed | 4/4 {done}\n"
            "[2026-11-26 21:00:00] server_args=ServerArgs(model_path='a', tp_si\nze=2)\nprogress")
    assert unwrap(text).splitlines() == [
        "INFO 11-30 14:02:25 [utils.py:233] non-default args: {'model': 'm'}",
        "Loading safetensors checkpoint shards: 100% Completed | 4/4 {done}",
        "[2026-11-26 21:00:00] server_args=ServerArgs(model_path='a', tp_size=2)", "progress"]
