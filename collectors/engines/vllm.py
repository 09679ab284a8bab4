"""`vllm bench serve|latency|throughput` result files -> run-record metrics (spec/metrics.md)."""
from __future__ import annotations

import math
import re
import shlex
from pathlib import Path

from ..record import metric


class EngineOutputError(ValueError):
    """An engine output that cannot be used; one line naming the file and the field."""


SERVE_LATENCIES = ("ttft", "tpot", "itl", "e2el")
SERVE_STATS = ("mean", "median", "p90", "p95", "p99")


def kind_of(obj: dict) -> str | None:
    if not isinstance(obj, dict):
        return None
    if "benchmark" in obj and "metrics" in obj:
        return "record"
    if "output_throughput" in obj or ("completed" in obj and "request_throughput" in obj):
        return "serve"
    if any(_SERVE_LATENCY.match(k) for k in obj):  # a serve result with latency statistics only
        return "serve"
    if "latencies" in obj and ("avg_latency" in obj or "percentiles" in obj):
        return "latency"
    if "tokens_per_second" in obj and "requests_per_second" in obj:
        return "throughput"
    return None


def _num(path: Path, obj: dict, key: str) -> float:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise EngineOutputError(f"{path}: field {key} is missing or not a finite number")
    return float(v)


SERVE_CONFIG_KEYS = ("request_rate", "max_concurrency", "burstiness", "num_prompts", "model_id",
                     "backend", "endpoint_type", "random_input_len", "random_output_len",
                     "input_len", "output_len", "tokenizer_id", "label", "date")


# the server settings `vllm bench sweep serve` varies and writes beside each result (its
# `--serve-params`), under their config names
SWEEP_SERVER_KEYS = {"max_num_seqs": "max_num_seqs", "max_num_batched_tokens": "max_num_batched_tokens",
                     "enable_chunked_prefill": "enable_chunked_prefill", "block_size": "block_size",
                     "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
                     "data_parallel_size": "dp", "kv_cache_dtype": "kv_cache_dtype",
                     "max_running_requests": "max_num_seqs",
                     "chunked_prefill_size": "chunked_prefill_size"}


def serve_config(obj: dict) -> dict:
    """What a serve result says about its run, under canonical names; which of it is the
    workload's identity and which is `meta` is engines/identity.py's to say."""
    cfg = {}
    for k, v in obj.items():
        key = SWEEP_SERVER_KEYS.get(k.replace("-", "_").lstrip("_"))
        if key and isinstance(v, (bool, int, float, str)):
            cfg[key] = v
    for k in SERVE_CONFIG_KEYS:
        if k in obj and obj[k] is not None and not isinstance(obj[k], (list, dict)):
            v = obj[k]
            if isinstance(v, float) and math.isinf(v):
                v = "inf"
            key = {"max_concurrency": "concurrency", "model_id": "model",
                   "random_input_len": "input_len", "random_output_len": "output_len"}.get(k, k)
            cfg[key] = v
    return cfg


def serve_metrics(path: Path, obj: dict) -> dict[str, float]:
    """One sample of each metric from one `vllm bench serve` result."""
    completed = obj.get("completed")
    if completed is not None and (not isinstance(completed, (int, float)) or completed <= 0):
        raise EngineOutputError(f"{path}: no request completed (completed={completed}); "
                                "refusing to record a throughput of zero")
    out = _request_counts(path, obj)
    if "output_throughput" in obj:
        out["tok_s"] = _num(path, obj, "output_throughput")
    for key in ("total_token_throughput", "total_throughput"):  # vLLM's name, SGLang's name
        if key in obj and obj[key] is not None:
            out["total_tok_s"] = _num(path, obj, key)
            break
    if "request_throughput" in obj:
        out["req_s"] = _num(path, obj, "request_throughput")
    for lat in SERVE_LATENCIES:
        for stat in SERVE_STATS:
            # SGLang's bench_serving writes end-to-end latency as `*_e2e_latency_ms`
            for key in (f"{stat}_{lat}_ms",) + ((f"{stat}_e2e_latency_ms",) if lat == "e2el" else ()):
                if key in obj and obj[key] is not None:
                    out[f"{lat}_ms_{stat}"] = _num(path, obj, key)
                    break
    if not set(out) - {"completed_requests", "failed_requests"}:
        raise EngineOutputError(f"{path}: no throughput or latency statistics in this result")
    return out


def _request_counts(path: Path, obj: dict) -> dict[str, float]:
    """The requests a serve result completed and those that failed, where it says them
    (`completed`, `failed`); never derived from the prompts asked for, which a dataset may not
    fill."""
    out: dict[str, float] = {}
    for key, name in (("completed", "completed_requests"), ("failed", "failed_requests")):
        v = obj.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise EngineOutputError(f"{path}: field {key} is not a request count ({v!r})")
        out[name] = float(v)
    return out


def throughput_metrics(path: Path, obj: dict) -> dict[str, float]:
    n = obj.get("num_requests")
    if isinstance(n, (int, float)) and n <= 0:
        raise EngineOutputError(f"{path}: no request completed (num_requests={n})")
    tps = _num(path, obj, "tokens_per_second")
    if tps <= 0:
        raise EngineOutputError(f"{path}: tokens_per_second is {tps}; no request completed")
    return {"total_tok_s": tps, "req_s": _num(path, obj, "requests_per_second")}


def latency_samples(path: Path, obj: dict, batch_size: int | None, output_len: int | None
                    ) -> dict[str, list[float]]:
    lat = obj.get("latencies")
    if not isinstance(lat, list) or not lat:
        raise EngineOutputError(f"{path}: field latencies is missing or empty")
    vals = []
    for i, v in enumerate(lat):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise EngineOutputError(f"{path}: latencies[{i}] is not a positive finite number")
        vals.append(float(v))
    out = {"latency_s": vals}
    if batch_size and output_len:
        out["tok_s"] = [batch_size * output_len / v for v in vals]
    return out


_FLAG = re.compile(r"(?:^|\s)(?:--(batch[-_]size|output[-_]len|input[-_]len|random[-_]input[-_]len|"
                   r"random[-_]output[-_]len|tensor[-_]parallel[-_]size|pipeline[-_]parallel[-_]size|"
                   r"decode[-_]context[-_]parallel[-_]size|max[-_]concurrency|request[-_]rate|dtype|"
                   r"dataset[-_]name|model)"
                   r"|-(tp|pp|dcp))[= ](\S+)")
# canonical config keys (spec/api.md, "Run record") of the flags above
_CANONICAL = {"tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
              "decode_context_parallel_size": "dcp", "max_concurrency": "concurrency",
              "random_input_len": "input_len", "random_output_len": "output_len"}
_SERVE_LATENCY = re.compile(r"^(mean|median|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|e2e_latency)_ms$")


def commands_beside(path: Path) -> dict:
    """Settings from a `.commands` file next to a result (the command line that produced it)."""
    cands = [path.with_name(path.name + ".commands"), path.with_suffix(".commands"),
             path.parent / ".commands", path.parent / "commands"]
    for c in cands:
        if c.is_file():
            return parse_flags(c.read_text(errors="replace"))
    return {}


def parse_flags(text: str) -> dict:
    out: dict = {}
    try:
        tokens = shlex.split(text.replace("\\\n", " "))
        text = " ".join(tokens)
    except ValueError:
        pass
    for long, short, v in _FLAG.findall(text):
        k = (long or short).replace("-", "_")
        k = _CANONICAL.get(k, k)
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def as_metrics(samples: dict[str, list[float]]) -> dict:
    return {k: metric(k, v) for k, v in samples.items()}
