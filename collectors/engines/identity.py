"""What defines an engine workload (spec/api.md v1.2 item 9): the config keys of a record made
from engine output, the rest of what a file says as `meta`, and the engine's own settings read
from a server log beside the result (vLLM's engine config line or its `non-default args`,
SGLang's `server_args=ServerArgs(...)`).

Keys at their engine default (pp=1, no quantization, no speculative decoding, ...) are left
out, so two engine versions that log different sets of defaults keep one series.
"""
from __future__ import annotations

import ast
import re
from datetime import datetime, timezone
from typing import Any

WORKLOAD_KEYS = ("model", "tp", "pp", "dp", "ep", "dcp", "quantization", "dtype", "kv_cache_dtype",
                 "speculative", "concurrency", "request_rate", "input_len", "output_len",
                 "batch_size")
# lengths define the workload only where the dataset is generated from them
LENGTH_KEYS = ("input_len", "output_len")
DEFAULTS: dict[str, tuple[Any, ...]] = {"pp": (1,), "dp": (1,), "dcp": (1,), "ep": (0, 1),
                                        "quantization": (None, "None", "none"),
                                        "speculative": (None,),
                                        "kv_cache_dtype": ("auto",), "dtype": ("auto",)}

VLLM_CONFIG_LINE = re.compile(r"Initializing an? (?:V\d )?LLM engine[^\n]*?with config: ([^\n]*)")
VLLM_NON_DEFAULT = re.compile(r"non-default args: (\{[^\n]*\})")
SGLANG_ARGS = re.compile(r"server_args=ServerArgs\(([^\n]*)\)")
PAIR = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\w+\([^()]*\)|\{[^{}]*\}|[^,]*)")

VLLM_KEYS = {"model": "model", "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
             "data_parallel_size": "dp", "decode_context_parallel_size": "dcp",
             "quantization": "quantization", "dtype": "dtype", "kv_cache_dtype": "kv_cache_dtype"}
SGLANG_KEYS = {"model_path": "model", "tp_size": "tp", "pp_size": "pp", "dp_size": "dp",
               "ep_size": "ep", "quantization": "quantization", "dtype": "dtype",
               "kv_cache_dtype": "kv_cache_dtype"}


def _value(text: str) -> Any:
    text = text.strip()
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        v = text
    if isinstance(v, str) and v.startswith("torch."):  # dtype=torch.bfloat16
        v = v[len("torch."):]
    return v


def _pairs(text: str) -> dict[str, Any]:
    return {k: _value(v) for k, v in PAIR.findall(text)}


def _speculative(method: Any, tokens: Any) -> str | None:
    if method in (None, "None", ""):
        return None
    return f"{method}:{tokens}" if tokens not in (None, "None", "") else str(method)


def _spec_of(value: Any) -> str | None:
    """vLLM's speculative_config: None, a dict, or SpeculativeConfig(method='mtp', ...)."""
    if value in (None, "None"):
        return None
    if isinstance(value, dict):
        return _speculative(value.get("method"), value.get("num_speculative_tokens"))
    text = str(value)
    method = re.search(r"method=['\"]?([\w-]+)", text)
    tokens = re.search(r"num_spec(?:ulative)?_tokens=(\d+)", text)
    return _speculative(method.group(1) if method else text, tokens.group(1) if tokens else None)


def server_config(text: str) -> dict[str, Any]:
    """The workload keys a vLLM or SGLang server log names (the last engine start wins)."""
    out: dict[str, Any] = {}
    for m in VLLM_CONFIG_LINE.finditer(text):
        pairs = _pairs(m.group(1))
        out = {VLLM_KEYS[k]: v for k, v in pairs.items() if k in VLLM_KEYS}
        if "speculative_config" in pairs:
            out["speculative"] = _spec_of(pairs["speculative_config"])
    for m in VLLM_NON_DEFAULT.finditer(text):
        try:
            args = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):
            continue
        if isinstance(args, dict):
            out.update({VLLM_KEYS[k]: v for k, v in args.items() if k in VLLM_KEYS})
            if "speculative_config" in args:
                out["speculative"] = _spec_of(args["speculative_config"])
            if args.get("enable_expert_parallel"):
                out["ep"] = int(out.get("tp", 1) or 1) * int(out.get("dp", 1) or 1)
    for m in SGLANG_ARGS.finditer(text):
        pairs = _pairs(m.group(1))
        out = {SGLANG_KEYS[k]: v for k, v in pairs.items() if k in SGLANG_KEYS}
        out["speculative"] = _speculative(pairs.get("speculative_algorithm"),
                                          pairs.get("speculative_num_draft_tokens"))
    return without_defaults(out)


def without_defaults(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if v not in DEFAULTS.get(k, ()) and not
            isinstance(v, (list, dict))}


def split(values: dict[str, Any], dataset: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, meta): the workload keys, and everything else the file says."""
    config, meta = {}, {}
    for k, v in values.items():
        if k in WORKLOAD_KEYS and not (k in LENGTH_KEYS and dataset not in (None, "random")):
            config[k] = v
        else:
            meta[k] = v
    if dataset is not None:
        meta["dataset_name"] = dataset
    return without_defaults(config), meta


# log time stamps: SGLang `[2026-11-28 10:00:00]`, vLLM `INFO 11-28 10:00:01` (no year)
SGLANG_TIME = re.compile(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
VLLM_TIME = re.compile(r"(?:INFO|WARNING|DEBUG|ERROR) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")


def log_started_at(text: str, year: int | None) -> str | None:
    """The first time stamp of a log, as UTC ISO 8601. vLLM's lack the year: without `year`
    they give nothing (the file's mtime is no year: it changes with every copy)."""
    m = SGLANG_TIME.search(text)
    if m:
        y, mo, d, h, mi, s = map(int, m.groups())
    else:
        m = VLLM_TIME.search(text)
        if not m or year is None:
            return None
        mo, d, h, mi, s = map(int, m.groups())
        y = year
    try:
        return datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
