"""What defines an engine workload (spec/api.md, Engine identity): the config keys of a record made
from engine output, the rest of what a file says as `meta`, and the engine's own settings read
from a server log beside the result (vLLM's engine config line or its `non-default args`,
SGLang's `server_args=ServerArgs(...)`).

Keys at their engine default (pp=1, no quantization, no speculative decoding, ...) are left
out, so two engine versions that log different sets of defaults keep one series.
"""
from __future__ import annotations

import ast
import math
import re
from datetime import datetime, timezone
from typing import Any

from ..configkeys import SERVER_WORKLOAD_KEYS, WORKLOAD_KEYS
from .serverlog import is_draft, loaded_models, model_id, speculative, tp_said, unwrap

# lengths define the workload only where the dataset is generated from them
LENGTH_KEYS = ("input_len", "output_len")
DEFAULTS: dict[str, tuple[Any, ...]] = {"pp": (1,), "dp": (1,), "dcp": (1,), "ep": (0, 1),
                                        "quantization": (None, "None", "none"),
                                        "speculative": (None,),
                                        "kv_cache_dtype": ("auto", None), "dtype": ("auto",),
                                        "max_num_seqs": (None,), "block_size": (None,),
                                        "max_num_batched_tokens": (None,),
                                        "enable_chunked_prefill": (None,),
                                        "chunked_prefill_size": (None,)}

VLLM_CONFIG_LINE = re.compile(r"Initializing an? (?:V\d )?LLM engine[^\n]*?with config: ([^\n]*)")
VLLM_NON_DEFAULT = re.compile(r"non-default args: (\{[^\n]*\})")
SGLANG_ARGS = re.compile(r"server_args=ServerArgs\(([^\n]*)\)")
PAIR = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\w+\([^()]*\)|\{[^{}]*\}|[^,]*)")

VLLM_KEYS = {"model": "model", "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp",
             "data_parallel_size": "dp", "decode_context_parallel_size": "dcp",
             "quantization": "quantization", "dtype": "dtype", "kv_cache_dtype": "kv_cache_dtype",
             "max_num_seqs": "max_num_seqs", "max_num_batched_tokens": "max_num_batched_tokens",
             "enable_chunked_prefill": "enable_chunked_prefill", "block_size": "block_size"}
SGLANG_KEYS = {"model_path": "model", "tp_size": "tp", "pp_size": "pp", "dp_size": "dp",
               "ep_size": "ep", "quantization": "quantization", "dtype": "dtype",
               "kv_cache_dtype": "kv_cache_dtype", "max_running_requests": "max_num_seqs",
               "chunked_prefill_size": "chunked_prefill_size", "page_size": "block_size"}
# SGLang prints every setting; these values are its defaults (page_size=1: one token a page)
SGLANG_DEFAULTS = {"block_size": (1,), "max_num_seqs": (None,), "chunked_prefill_size": (None,)}
META_MAX_CHARS = 200  # a longer setting (a JSON override, a chat template) is left out of meta

# SGLang's log prefix names the process's ranks: `[2026-11-28 10:00:00 DP0 PP1 TP3 EP3]`
SGLANG_RANKS = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d((?: [A-Z_]*[A-Z]\d+)+)\]", re.M)
# vLLM's worker processes: `(VllmWorker TP1 pid=..)`, `(Worker_PP0_TP1 pid=..)`
VLLM_RANKS = re.compile(r"^(?:\x1b\[[0-9;]*m)?\((?:VllmWorker|Worker|RayWorkerWrapper)[ _-]?"
                        r"((?:[A-Z]+\d+[ _]?)+) pid=", re.M)
RANK_TOKEN = re.compile(r"(DP|PP|TP|EP)(\d+)")
# SGLang's weight-loading line: `Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16`
SGLANG_LOAD = re.compile(r"Load weight end\.[^\n]*?type=(\w+)(?:[^\n]*?dtype=torch\.(\w+))?")
# the KV cache's resolved dtype: SGLang's `Using KV cache dtype: torch.float8_e4m3fn` or
# `KV Cache is allocated. dtype: torch.bfloat16, ...`; vLLM's `Using fp8 data type to store kv`
KV_DTYPE = re.compile(r"(?:Using KV cache dtype|KV Cache is allocated\. dtype): torch\.(\w+)"
                      r"|Using (\w+) data type to store kv cache")
TORCH_KV = {"float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}


def config_value(text: str) -> Any:
    """One setting's value, as a command line (`--config KEY=VALUE`) or a log writes it:
    true/false/none (any case), integers, finite numbers, a quoted string, a Python literal
    (`{...}`, `[...]`), `torch.bfloat16` as `bfloat16`; else the text itself."""
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        f = float(text)
        if math.isfinite(f):
            return f
        return text  # `inf` stays the word: JSON has no infinity
    except ValueError:
        pass
    if text[:1] in "'\"{[(" and text:
        try:
            v = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
        if isinstance(v, str):
            return v[len("torch."):] if v.startswith("torch.") else v
        return v
    return text[len("torch."):] if text.startswith("torch.") else text


def _pairs(text: str) -> dict[str, Any]:
    return {k: config_value(v) for k, v in PAIR.findall(text)}


def _spec_of(value: Any) -> str | None:
    """vLLM's speculative_config: None, a dict, or SpeculativeConfig(method='mtp', ...)."""
    if value in (None, "None"):
        return None
    if isinstance(value, dict):
        return speculative(value.get("method"), value.get("num_speculative_tokens"),
                           value.get("model"))
    text = str(value)
    method = re.search(r"method=['\"]?([\w-]+)", text)
    tokens = re.search(r"num_spec(?:ulative)?_tokens=(\d+)", text)
    draft = re.search(r"\bmodel=['\"]([^'\"]+)", text)
    return speculative(method.group(1) if method else text, tokens.group(1) if tokens else None,
                       draft.group(1) if draft else None)


def _meta(pairs: dict[str, Any], known: dict[str, str]) -> dict[str, Any]:
    """The settings a log names that are not the workload's: short scalars."""
    return {k: v for k, v in pairs.items() if k not in known and v is not None
            and isinstance(v, (bool, int, float, str)) and len(str(v)) <= META_MAX_CHARS}


def _ranks(text: str) -> dict[str, int]:
    """tp/pp/dp/ep as the largest rank in the log prefixes plus one; a kind of rank that only
    shows rank 0 says nothing (the other ranks may not log)."""
    seen: dict[str, set[int]] = {}
    for rx in (SGLANG_RANKS, VLLM_RANKS):
        for m in rx.finditer(text):
            for token in re.split(r"[ _]", m.group(1)):
                t = RANK_TOKEN.fullmatch(token)
                if t:
                    seen.setdefault(t.group(1).lower(), set()).add(int(t.group(2)))
    return {k: max(v) + 1 for k, v in seen.items() if max(v) > 0}


def server_config(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, meta) of a vLLM or SGLang server log: the workload keys it names (the last
    engine start wins; rank prefixes, the weight-loading line and the KV dtype line fill what
    the settings lines do not say) and its other settings."""
    text = unwrap(text)
    out: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for m in VLLM_CONFIG_LINE.finditer(text):
        pairs = _pairs(m.group(1))
        out = {VLLM_KEYS[k]: v for k, v in pairs.items() if k in VLLM_KEYS}
        meta = _meta(pairs, {**VLLM_KEYS, "speculative_config": ""})
        if "speculative_config" in pairs:
            out["speculative"] = _spec_of(pairs["speculative_config"])
    for m in VLLM_NON_DEFAULT.finditer(text):
        try:
            args = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):
            continue
        if isinstance(args, dict):
            out.update({VLLM_KEYS[k]: v for k, v in args.items() if k in VLLM_KEYS})
            meta.update(_meta(args, {**VLLM_KEYS, "speculative_config": ""}))
            if "speculative_config" in args:
                out["speculative"] = _spec_of(args["speculative_config"])
            if args.get("enable_expert_parallel"):
                out["ep"] = int(out.get("tp", 1) or 1) * int(out.get("dp", 1) or 1)
    for m in SGLANG_ARGS.finditer(text):
        pairs = _pairs(m.group(1))
        out = {SGLANG_KEYS[k]: v for k, v in pairs.items() if k in SGLANG_KEYS
               and v not in SGLANG_DEFAULTS.get(SGLANG_KEYS[k], ())}
        meta = _meta(pairs, {**SGLANG_KEYS, "speculative_algorithm": "",
                             "speculative_num_draft_tokens": "",
                             "speculative_draft_model_path": ""})
        out["speculative"] = speculative(pairs.get("speculative_algorithm"),
                                         pairs.get("speculative_num_draft_tokens"),
                                         pairs.get("speculative_draft_model_path"))
    _from_lines(text, out)
    if VLLM_NON_DEFAULT.search(text) and not VLLM_CONFIG_LINE.search(text):
        out.setdefault("tp", 1)  # vLLM's `non-default args` names every setting not at default
    if out.get("model") is not None:
        out["model"], path = model_id(out["model"])
        if path:
            meta["model_path"] = path
    return without_defaults(out), meta


def _from_lines(text: str, out: dict[str, Any]) -> None:
    """What the settings lines leave unsaid, from the lines every start prints: the ranks, the
    model's architecture and dtype (SGLang's weight loading), the KV cache's dtype (kept only
    where it is not the model's own: `auto` resolves to it)."""
    for k, v in _ranks(text).items():
        out.setdefault(k, v)
    tp = tp_said(text, *(int(out.get(k) or 1) for k in ("pp", "dp")))
    if tp and "tp" not in out:
        out["tp"] = tp
    draft = str(out.get("speculative") or "").partition("@")[2]
    named = loaded_models(text)
    targets = [m for m in named if not is_draft(m) and model_id(m)[0] != draft]
    if targets:
        out.setdefault("model", targets[0])
    # the model's class: the first that is not a speculative draft's; a draft loaded beside it
    # is the run's speculative setting where the settings lines did not say one
    archs = SGLANG_LOAD.findall(text)
    drafts = [a for a, _ in archs if is_draft(a)] + [m for m in named if is_draft(m)]
    if drafts and not out.get("speculative"):
        out["speculative"] = speculative(None, None, drafts[0])
    loads = [(a, d) for a, d in archs if not is_draft(a)]
    if loads:
        arch, dtype = loads[0]
        out.setdefault("model", arch)
        if dtype and out.get("dtype") in (None, "auto"):
            out["dtype"] = dtype
    kv = KV_DTYPE.findall(text)
    if kv and out.get("kv_cache_dtype") in (None, "auto"):
        name = kv[-1][0] or kv[-1][1]
        name = TORCH_KV.get(name, name)
        if name != out.get("dtype"):
            out["kv_cache_dtype"] = name


# what says which server an engine output measured, and the flag that gives each
IDENTITY_FLAGS = {"model": "--config model=...", "tp": "--config tp=...", "gpu": "--gpu",
                  "gpu_count": "--gpu-count"}


def unknown_identity(rec: dict, index: int, warnings: list[str]) -> None:
    """The identity keys an engine output does not say go into its config as `unknown`
    (`model,tp`), so it never shares a series with a run that knows them, and a gate names
    them (spec/api.md, Engine identity)."""
    cfg, hw = rec["config"], rec.get("hardware") or {}
    missing = [k for k in ("model", "tp") if cfg.get(k) in (None, "")]
    missing += [k for k in ("gpu", "gpu_count") if not hw.get(k)]
    cfg.pop("unknown", None)
    if missing:
        cfg["unknown"] = ",".join(missing)
        warnings.append(f"record {index} ({rec['benchmark']}): {', '.join(missing)} unknown: "
                        "its series says so and a gate names it (give "
                        f"{' '.join(IDENTITY_FLAGS[k] for k in missing)})")


def normalize_model(rec: dict) -> None:
    """The model's id in config (a local path: its hub name or final folder), the path in meta."""
    cfg = rec.setdefault("config", {})
    if cfg.get("model") is None:
        return
    cfg["model"], path = model_id(cfg["model"])
    if path:
        rec["meta"] = {**(rec.get("meta") or {}), "model_path": path}


def is_architecture(model: Any) -> bool:
    """A model named by its class (`Qwen3ForCausalLM`), not by its weights' name or path."""
    return isinstance(model, str) and "/" not in model and bool(re.search(r"For[A-Z]\w+$", model))


def without_defaults(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if v not in DEFAULTS.get(k, ()) and not
            isinstance(v, (list, dict))}


def split(values: dict[str, Any], dataset: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, meta): the workload keys, and everything else the file says."""
    config, meta = {}, {}
    for k, v in values.items():
        if (k in WORKLOAD_KEYS or k in SERVER_WORKLOAD_KEYS) and not (
                k in LENGTH_KEYS and dataset not in (None, "random")):
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
