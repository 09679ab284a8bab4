"""Guard presets for the ordering check: kernel-name regexes for real engines.

`--guard-preset moe-routed` guards the routed-expert kernels, the ones the shared-expert PR's
ordering
contract is about (a grid that may wait on all SMs must not be submitted beside unjoined
auxiliary work). It is a starting point, not a closed list: kernel names change with engine
versions and backends; extend it with `--guard-kernels REGEX` (both are OR-ed) and check the
`guarded_kernels` count the check reports.

Names, from the engines' sources and traces:
- vLLM: the Triton `fused_moe_kernel` (and `fused_moe_kernel_gptq_awq`), the routing prologue
  `moe_align_block_size_kernel` / `moe_align_block_size_small_batch_expert_kernel` /
  `count_and_sort_expert_tokens_kernel`, CUTLASS grouped GEMMs (`cutlass_moe_mm`, kernels whose
  name holds `GroupedGemm` / `grouped_gemm` / `KernelPtrArray`), FlashInfer / TensorRT-LLM MoE
  kernels (`cutlass_fused_moe`, `trtllm_*_moe`, `moe::dev::` / `fused_moe`), DeepGEMM's grouped
  GEMMs (`m_grouped_gemm`, `MGroupedContiguous`, `MGroupedMasked`).
- triton_kernels' MoE (vLLM's and SGLang's gpt-oss path): the grouped GEMMs `_matmul_ogs_*` and
  the persistent `_p_matmul_ogs_*` (their names carry the tile after the function's), the
  routing `_topk_forward` (and vLLM's `_topk_softmax_kernel`), `_combined_routing*`,
  `_routing_memset_indx` / `_routing_compute_indx`.
- FlashInfer's CUTLASS fused MoE (TensorRT-LLM's kernels): `expandInputRowsKernel`,
  `doActivationKernel`, `finalizeMoeRoutingKernel`, `computeStridesTmaWarpSpecializedKernel`;
  DeepGEMM's API names as they show in ranges: `m_grouped_fp8_gemm_nt_contiguous`,
  `fp8_m_grouped_gemm_nt_masked`.
- SGLang: `fused_moe_kernel`, `moe_fused_gate_kernel`, `moe_align_block_size_kernel`,
  `ep_moe`/`grouped_gemm_triton_kernel`.
- Persistent (resident-grid) kernels of any engine: names holding `persistent` or `resident`.
"""
from __future__ import annotations

GUARD_PRESETS: dict[str, str] = {
    "moe-routed": "|".join([
        r"fused_moe_kernel", r"moe_align_block_size", r"count_and_sort_expert_tokens",
        r"moe_fused_gate", r"cutlass_moe", r"cutlass_fused_moe", r"[Gg]rouped_?[Gg]emm",
        r"KernelPtrArray", r"trtllm_\w*moe", r"moe::dev::", r"m_grouped_gemm",
        r"MGrouped(?:Contiguous|Masked)", r"ep_moe", r"persistent", r"resident",
        r"^_(?:p_)?matmul_ogs", r"^_topk", r"_combined_routing", r"^_routing_",
        r"expandInputRowsKernel", r"doActivationKernel", r"finalizeMoeRouting",
        r"computeStridesTmaWarpSpecialized", r"m_grouped_\w*gemm",
    ]),
}


def guard_regex(preset: str | None, kernels: str | None) -> str | None:
    """The kernel-name regex of a preset and/or a user's regex (OR-ed)."""
    parts = []
    if preset:
        if preset not in GUARD_PRESETS:
            raise ValueError(f"unknown guard preset {preset!r} (known: {', '.join(GUARD_PRESETS)})")
        parts.append(GUARD_PRESETS[preset])
    if kernels:
        parts.append(kernels)
    return "|".join(f"(?:{p})" for p in parts) or None


# The NVTX ranges engines launch their routed experts in (vLLM's and SGLang's model code, this
# project's decode benchmark): guarded by default, where a trace has any, when no guard is named.
ROUTED_RANGES = r"(?i:routed[_. ]?experts?|moe[_.]routed|fused_moe)"

