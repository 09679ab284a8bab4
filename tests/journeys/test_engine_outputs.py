"""Engine outputs into a server and through the gate: a CI job that retries stores nothing
twice, and an engine upgrade keeps its series."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import DATA

from .shell import PERFWARDEN, run

ENGINES = DATA / "engines"
SHAREGPT = {"backend": "sglang", "dataset_name": "sharegpt", "request_rate": float("inf"),
            "max_concurrency": 8, "random_input_len": 1024, "random_output_len": 1024,
            "duration": 40.2, "completed": 200, "request_throughput": 4.97,
            "output_throughput": 1021.5, "total_throughput": 2140.3, "mean_ttft_ms": 80.1,
            "median_ttft_ms": 77.0, "p99_ttft_ms": 190.2, "mean_tpot_ms": 7.2,
            "median_tpot_ms": 7.1, "p99_tpot_ms": 9.9}
# every kind of engine output `perfwarden ingest` reads, as a CI job hands it over
KINDS = {
    "vllm-serve": ["serve.json"],
    "vllm-serve-sweep": ["sweep.jsonl"],
    "vllm-serve-with-log": ["serve.json", "vllm_merged.log"],
    "vllm-latency": ["latency.json", "latency.json.commands"],
    "vllm-throughput": ["throughput.json"],
    "vllm-log": ["vllm_merged.log"],
    "vllm-old-log": ["vllm_old.log"],
    "sglang-serve": ["sglang_bench_serving.jsonl"],
    "sglang-log": ["sglang.log"],
}


def ingest(server: str, *files, extra: tuple[str, ...] = ()) -> list[int]:
    r = run([PERFWARDEN, "ingest", *map(str, files), "--server", server, "--gpu", "NVIDIA H200",
             "--no-detect", *extra])
    assert r.returncode == 0, r.stderr
    return [int(x) for x in r.stdout.split()]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_retried_ingest_stores_nothing_new(served_shared, tmp_path, kind):
    served = served_shared
    for name in KINDS[kind]:
        shutil.copy(ENGINES / name, tmp_path / name)
    inputs = [tmp_path / n for n in KINDS[kind] if not n.endswith(".commands")]
    before = len(served.runs())
    first = ingest(served.url, *inputs)
    count = len(served.runs())
    again = ingest(served.url, *inputs)  # the CI job's retry, minutes later
    assert again == first and len(served.runs()) == count == before + len(first)


def test_sglang_sharegpt_lines_name_no_lengths(served_shared, tmp_path):
    served = served_shared
    p = tmp_path / "sharegpt.jsonl"
    p.write_text(json.dumps(SHAREGPT) + "\n")
    (rid,) = ingest(served.url, p, extra=("--started-at", "2026-11-28T10:00:00Z"))
    run_ = served.get(f"/api/v1/runs/{rid}")
    assert run_["config"] == {"concurrency": 8, "request_rate": "inf",
                              "unknown": "model,tp,gpu_count"}
    assert run_["meta"]["dataset_name"] == "sharegpt" and run_["meta"]["backend"] == "sglang"
    assert run_["started_at"] == "2026-11-28T10:00:00Z"


V0_LOG = (
    "INFO 11-20 09:00:00 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5) with config: "
    "model='zai-org/GLM-4.6', speculative_config=None, tokenizer='zai-org/GLM-4.6', "
    "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=True, "
    "dtype=torch.bfloat16, max_seq_len=8192, download_dir=None, load_format=LoadFormat.AUTO, "
    "tensor_parallel_size={tp}, pipeline_parallel_size=1, disable_custom_all_reduce=False, "
    "quantization=fp8, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
    "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar', reasoning_backend=None), "
    "seed=0, served_model_name=zai-org/GLM-4.6, use_async_output_proc=True\n"
    "INFO 11-20 09:01:10 [executor_base.py:112] # cuda blocks: 36148, # CPU blocks: 4096\n"
    "INFO 11-20 09:01:10 [executor_base.py:117] Maximum concurrency for 8192 tokens per "
    "request: 70.60x\n")
V1_LOG = (
    "(APIServer pid=1000) INFO 11-28 09:59:50 [utils.py:233] non-default args: {{'model': "
    "'zai-org/GLM-4.6', 'trust_remote_code': True, 'tensor_parallel_size': {tp}, "
    "'quantization': 'fp8'}}\n"
    "(EngineCore_DP0 pid=1200) INFO 11-28 10:00:01 [core.py:77] Initializing a V1 LLM engine "
    "(v0.11.0) with config: model='zai-org/GLM-4.6', speculative_config=None, "
    "tokenizer='zai-org/GLM-4.6', skip_tokenizer_init=False, tokenizer_mode=auto, "
    "trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=8192, load_format=auto, "
    "tensor_parallel_size={tp}, pipeline_parallel_size=1, data_parallel_size=1, "
    "decode_context_parallel_size=1, disable_custom_all_reduce=False, quantization=fp8, "
    "enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
    "structured_outputs_config=StructuredOutputsConfig(backend='auto', reasoning_parser=''), "
    "seed=0, served_model_name=zai-org/GLM-4.6, enable_prefix_caching=True, "
    "compilation_config={{\"level\":3,\"cudagraph_mode\":[2,1],\"use_inductor\":true}}\n"
    "(EngineCore_DP0 pid=1200) INFO 11-28 10:01:12 [kv_cache_utils.py:1087] GPU KV cache size: "
    "578,368 tokens\n"
    "(EngineCore_DP0 pid=1200) INFO 11-28 10:01:12 [kv_cache_utils.py:1091] Maximum concurrency "
    "for 8,192 tokens per request: 70.60x\n")


def results(folder, version: str, tp: int, scale: list[float]) -> list:
    """Three `vllm bench serve` results of one workload as that vLLM version writes them, and
    the server log beside them."""
    folder.mkdir()
    base = json.loads((ENGINES / "serve.json").read_text())
    out = []
    for i, f in enumerate(scale):
        r = {k: (v * f if isinstance(v, float) and k.endswith(("_ms", "throughput")) else v)
             for k, v in base.items()}
        r["date"] = f"2026112{'0' if version == 'v0' else '8'}-10{i:02d}00"
        if version == "v1":  # what a newer vLLM writes beside the same workload
            r.update(endpoint_type="openai-chat", label=None, num_prompts=80, burstiness=1.0)
        else:
            r.pop("burstiness", None)
        p = folder / f"result{i}.json"
        p.write_text(json.dumps(r))
        out.append(p)
    log = folder / "server.log"
    log.write_text((V0_LOG if version == "v0" else V1_LOG).format(tp=tp))
    return out + [log]


def test_two_vllm_versions_of_one_workload_are_gated(served, tmp_path):
    old = ingest(served.url, *results(tmp_path / "v085", "v0", 8, [1.0, 1.0004, 0.9996]),
                 extra=("--benchmark", "glm-serve"))
    new = ingest(served.url, *results(tmp_path / "v0110", "v1", 8, [1.0002, 0.9998, 1.0001]),
                 extra=("--benchmark", "glm-serve"))
    runs = {r["id"]: r for r in served.runs(benchmark="glm-serve")}
    assert {runs[i]["series_id"] for i in old + new} == {runs[old[0]]["series_id"]}
    assert runs[new[0]]["config"] == {"model": "zai-org/GLM-4.6", "tp": 8, "quantization": "fp8",
                                      "dtype": "bfloat16", "concurrency": 1,
                                      "request_rate": "inf"}
    assert runs[new[0]]["meta"]["num_prompts"] == 80
    r = run([PERFWARDEN, "baseline", "set", "v085", "--benchmark", "glm-serve", "--server",
             served.url, *[a for i in old for a in ("--run", str(i))]])
    assert r.returncode == 0, r.stderr
    gate = [PERFWARDEN, "gate", "--server", served.url, "--benchmark", "glm-serve", "--baseline",
            "v085"]
    r = run(gate + [a for i in new for a in ("--run", str(i))])
    assert r.returncode == 0 and "verdict: PASS" in r.stdout, r.stdout + r.stderr
    # a TP4 deployment of the same model is another server: refused in one line naming tp
    tp4 = ingest(served.url, *results(tmp_path / "tp4", "v1", 4, [1.0, 1.0, 1.0]),
                 extra=("--benchmark", "glm-serve"))
    r = run(gate + ["--run", str(tp4[0]), "--json"])
    assert r.returncode == 65 and not r.stdout, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and \
        f"has tp=8 and candidate run {tp4[0]} has tp=4" in r.stderr, r.stderr
