"""KV-cache capacity from vLLM and SGLang logs (spec/metrics.md, "KV-cache capacity")."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..record import metric
from .identity import SGLANG_ARGS, VLLM_CONFIG_LINE, VLLM_NON_DEFAULT, log_started_at, server_config

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
VLLM_KV = re.compile(r"GPU KV cache size:\s*([\d,_]+)\s*tokens")
# older vLLM logs said CUDA; V0 engines of 0.6-0.9 write the platform's name, "# cuda blocks"
VLLM_BLOCKS = re.compile(r"# (?:GPU|CUDA) blocks:\s*([\d,]+)", re.I)
VLLM_BLOCK_SIZE = re.compile(r"block[_ ]size[=:\s]+(\d+)")
VLLM_CONC = re.compile(r"Maximum concurrency for\s*([\d,]+)\s*tokens per request:\s*([\d.]+)x")
SGL_MAX = re.compile(r"max_total_num_tokens\s*=\s*(\d+)")
SGL_ALLOC = re.compile(r"KV Cache is allocated\.\s*#tokens:\s*([\d,]+)")
VLLM_DEFAULT_BLOCK_SIZE = 16


@dataclass
class LogFacts:
    engine: str | None = None
    kv_capacity_tokens: int | None = None
    kv_derived: bool = False
    kv_max_concurrency: float | None = None
    warnings: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)  # the workload keys the server logged
    meta: dict = field(default_factory=dict)  # its other settings
    started_at: str | None = None  # its first time stamp that names the year

    def metrics(self) -> dict:
        out = {}
        if self.kv_capacity_tokens is not None:
            out["kv_capacity_tokens"] = metric("kv_capacity_tokens", [self.kv_capacity_tokens])
        if self.kv_max_concurrency is not None:
            out["kv_max_concurrency"] = metric("kv_max_concurrency", [self.kv_max_concurrency])
        return out


def looks_like_log(text: str) -> bool:
    return any(rx.search(text) for rx in (VLLM_KV, VLLM_BLOCKS, SGL_MAX, SGL_ALLOC, VLLM_CONC,
                                          VLLM_CONFIG_LINE, VLLM_NON_DEFAULT, SGLANG_ARGS))


def _ints(matches: list[str]) -> list[int]:
    return [int(m.replace(",", "").replace("_", "")) for m in matches]


def parse_log(path: Path, text: str | None = None, year: int | None = None) -> LogFacts:
    if text is None:
        text = path.read_text(errors="replace")
    text = ANSI.sub("", text)
    config, meta = server_config(text)
    facts = LogFacts(config=config, meta=meta)
    facts.started_at = log_started_at(text, year)
    sgl_max = _ints(SGL_MAX.findall(text))
    sgl_alloc = _ints(SGL_ALLOC.findall(text))
    vllm_kv = _ints(VLLM_KV.findall(text))
    if sgl_max or sgl_alloc:
        facts.engine = "sglang"
        values = sgl_max or sgl_alloc
        facts.kv_capacity_tokens = min(values)
        if len(set(values)) > 1:
            which = "max_total_num_tokens" if sgl_max else "#tokens"
            facts.warnings.append(f"{path.name}: ranks logged different {which} "
                                  f"({', '.join(f'{v:,}' for v in sorted(set(values)))}); using the minimum")
        return facts
    if vllm_kv:
        facts.engine = "vllm"
        facts.kv_capacity_tokens = min(vllm_kv)
        if len(set(vllm_kv)) > 1:
            facts.warnings.append(f"{path.name}: ranks logged different GPU KV cache sizes "
                                  f"({', '.join(f'{v:,}' for v in sorted(set(vllm_kv)))}); using the minimum")
    else:
        blocks = _ints(VLLM_BLOCKS.findall(text))
        if blocks:
            facts.engine = "vllm"
            bs = VLLM_BLOCK_SIZE.findall(text)
            block_size = int(bs[-1]) if bs else VLLM_DEFAULT_BLOCK_SIZE
            facts.kv_capacity_tokens = min(blocks) * block_size
            facts.kv_derived = True
            facts.warnings.append(f"{path.name}: KV capacity derived as # GPU/CUDA blocks "
                                  f"{min(blocks):,} x block size {block_size}")
    conc = VLLM_CONC.findall(text)
    if conc:
        facts.engine = facts.engine or "vllm"
        facts.kv_max_concurrency = min(float(c[1]) for c in conc)
    return facts
