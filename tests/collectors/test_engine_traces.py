"""Step families, ordering verdicts and per-device kernel rows on real engine-like traces
(spec/metrics.md, Steps in real engines' traces to Kernel breakdown per device): the vLLM trace from
an MI300 and the H200 captures of
bench/gpu/engine_moe_step.py (data/h200/engines/README.md)."""
from __future__ import annotations

import gzip
import json

import pytest

from collectors.cli import main as cli_main
from collectors.traces import analyze_files
from collectors.traces.analysis import project
from collectors.traces.load import load_trace
from collectors.traces.ordering import check_ordering
from collectors.traces.presets import GUARD_PRESETS, guard_regex
from collectors.traces.steps import choose, keep_regex
from tests.conftest import H200, ROOT

ENGINES = H200 / "engines"
VLLM_MI300 = ROOT / "data" / "engines" / "vllm_piecewise_prefilldecode_mi300.json.gz"
ROUTED = GUARD_PRESETS["moe-routed"]


@pytest.mark.parametrize(("names", "source", "decode", "prefill"), [
    (["decode_step_3", "step[DECODE bs=4]"], "auto: decode_step", ["decode_step_3"], []),
    (["step[DECODE bs=32]", "step[EXTEND bs=15 toks=15360]", "step[TARGET_VERIFY bs=8]",
      "step[DRAFT_EXTEND bs=8]", "step[MIXED bs=3]", "draft step[DECODE bs=32]",
      "step[DECODE bs=2 g_sq=2 g_sqsq=2 g_sqsk=30 g_sk=30]", "ProfilerStep#4"], "auto: sglang",
     ["step[DECODE bs=32]", "step[TARGET_VERIFY bs=8]", "step[DRAFT_EXTEND bs=8]",
      "draft step[DECODE bs=32]", "step[DECODE bs=2 g_sq=2 g_sqsq=2 g_sqsk=30 g_sk=30]"],
     ["step[EXTEND bs=15 toks=15360]", "step[MIXED bs=3]"]),
    (["execute_32_context_0(sq0sk0sq0sk0)_generation_32(sq32sk55086sq1sk1722)",
      "execute_8192_context_9(sq8155sk8430)_generation_37(sq37sk34489)",
      "execute_context_0(0)_generation_8(8)", "execute_context_2(300)_generation_6(6)",
      "execute_new_0_cached_12", "execute_new_3_cached_9", "ProfilerStep#7"], "auto: vllm",
     ["execute_32_context_0(sq0sk0sq0sk0)_generation_32(sq32sk55086sq1sk1722)",
      "execute_context_0(0)_generation_8(8)", "execute_new_0_cached_12"],
     ["execute_8192_context_9(sq8155sk8430)_generation_37(sq37sk34489)",
      "execute_context_2(300)_generation_6(6)", "execute_new_3_cached_9"]),
    (["ProfilerStep#0", "aten::mm"], "auto: pytorch", ["ProfilerStep#0"], []),
    (["prefill_step", "decode_step_0", "decode_step_1"], "auto: decode_step",
     ["decode_step_0", "decode_step_1"], ["prefill_step"]),
])
def test_step_families(names, source, decode, prefill):
    import re

    c = choose(names, None)
    assert c.source == source
    assert [n for n in names if re.search(c.regex, n)] == decode
    got_prefill = [n for n in names if c.prefill_regex and re.search(c.prefill_regex, n)]
    assert got_prefill == prefill
    keep = re.compile(keep_regex(None))
    assert all(keep.search(n) for n in decode + prefill)


def test_step_regex_wins_and_nothing_found():
    assert choose(["step[DECODE bs=1]"], "mine").source == "--step-regex"
    assert choose(["aten::mm", "forward"], None).source == "auto: none found"


def test_vllm_mi300_one_prefill_step():
    s = analyze_files([VLLM_MI300])
    assert (s["step_source"], s["steps"], s["prefill_steps"]) == ("auto: vllm", 0, 1)
    assert s["step_gpu_time_us_mean"] is None
    assert any("prefill" in w for w in s["warnings"])


def test_cli_names_the_family(capsys):
    assert cli_main(["analyze", str(VLLM_MI300), "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step_source"] == "auto: vllm"
    assert out["steps"] == 0 and out["prefill_steps"] == 1
    assert "context_0" in out["step_regex"]


CAPTURES = [(prof, order, mode) for prof in ("torch", "nsys") for mode in ("eager", "graphs")
            for order in ("joined", "unjoined", "serial")]
EXPECTED = {"joined": "ok", "unjoined": "hazard", "serial": "ok"}


def _capture(prof: str, order: str, mode: str):
    return ENGINES / (f"{prof}-{order}-{mode}.json.gz" if prof == "torch"
                      else f"{prof}-{order}-{mode}.sqlite.gz")


@pytest.mark.parametrize(("prof", "order", "mode"), CAPTURES)
def test_h200_orders(prof, order, mode):
    path = _capture(prof, order, mode)
    trace = load_trace(path, keep_regex(None, "eager_reference_step"))
    s = analyze_files([path])
    assert s["step_source"] == ("auto: vllm" if prof == "torch" else "auto: sglang")
    assert (s["steps"], s["prefill_steps"]) == (5, 1)
    assert (s["graph_replay_ops"] > 0) == (mode == "graphs")
    o = check_ordering(trace, ROUTED)
    assert o["verdict"] == EXPECTED[order], o["reason"]
    assert o["guarded_kernels"] == 5 * 4 * 2  # 5 steps, 4 layers, align + fused_moe
    assert o["sync_records"]
    if order == "serial":
        assert o["aux_ops_in_guarded_steps"] == 0
        assert o["reason"] == "no auxiliary work in the guarded steps"
    else:
        assert o["aux_ops_in_guarded_steps"] > 0
        assert o["ordered_checked"] > 0
    if order == "unjoined":
        assert o["unordered"] == o["ordered_checked"]
        assert all(u["unjoined_aux_streams"] for u in o["unordered_list"])


def test_kineto_waits_are_unresolved_and_still_join():
    """PyTorch 2.11 writes wait_on_stream -1: the joined order is ok only by reading such a
    wait on the main stream as joining the aux stream launched before it (spec/metrics.md, Stream
    waits in Kineto traces)."""
    trace = load_trace(_capture("torch", "joined", "eager"), keep_regex(None))
    assert trace.waits and all(w.on_stream == -1 for w in trace.waits)
    assert all(w.corr >= 0 for w in trace.waits)
    o = check_ordering(trace, ROUTED)
    assert (o["verdict"], o["unordered"], o["ordered_checked"]) == ("ok", 0, 40)


def test_kineto_without_sync_events_says_how(tmp_path):
    src = _capture("torch", "unjoined", "eager")
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "cuda_sync"]
    bare = tmp_path / "no-sync.json.gz"
    bare.write_bytes(gzip.compress(json.dumps(doc).encode()))
    o = check_ordering(load_trace(bare, keep_regex(None)), ROUTED)
    assert o["verdict"] == "unknown" and not o["sync_records"]
    assert "enable_cuda_sync_events=True" in o["reason"]


def test_guard_preset_names_engine_kernels():
    import re

    rx = re.compile(guard_regex("moe-routed", None) or "")
    for name in ("fused_moe_kernel", "moe_align_block_size_kernel",
                 "moe_align_block_size_small_batch_expert_kernel", "moe_fused_gate_kernel",
                 "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<"
                 "cutlass::gemm::GroupProblemShape<...>, KernelPtrArrayTmaWarpSpecialized>>",
                 "void deep_gemm::sm90_fp8_gemm_1d2d_impl<GemmType::MGroupedContiguous>",
                 "resident_moe_kernel", "matmul_kernel_persistent",
                 # triton_kernels' MoE (gpt-oss in vLLM and SGLang)
                 "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu",
                 "_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1", "_topk_forward",
                 "_topk_softmax_kernel", "_combined_routing_compute", "_routing_memset_indx",
                 # FlashInfer's CUTLASS fused MoE and DeepGEMM's grouped GEMMs
                 "void tensorrt_llm::kernels::cutlass_kernels::expandInputRowsKernel<__nv_bfloat16>",
                 "void tensorrt_llm::kernels::cutlass_kernels::finalizeMoeRoutingKernel<float>",
                 "doActivationKernel", "computeStridesTmaWarpSpecializedKernel",
                 "m_grouped_fp8_gemm_nt_contiguous"):
        assert rx.search(name), name
    for name in ("nvjet_sm90_tst_64x32_64x16_1x2_h_bz_NNT", "triton_poi_fused_add_0",
                 "_matmul_kernel", "void at::native::sbtopk::gatherTopK<float>",
                 "void at::native::vectorized_elementwise_kernel<4>"):
        assert not rx.search(name), name
    assert guard_regex("moe-routed", "mine").endswith("|(?:mine)")
    with pytest.raises(ValueError, match="unknown guard preset"):
        guard_regex("nope", None)


def test_kernel_rows_per_device():
    s = analyze_files([H200 / "traces" / "tp2-overlap-eager-nsys_M1.sqlite.gz"])
    rows = s["kernels"]
    keys = [(k["name"], k["device"], k["stream"], k["kind"]) for k in rows]
    assert len(keys) == len(set(keys))
    assert {k["rank"] for k in rows} == {0, 1}
    by_name: dict[str, set[int]] = {}
    for k in rows:
        by_name.setdefault(k["name"], set()).add(k["rank"])
    assert sum(1 for ranks in by_name.values() if ranks == {0, 1}) >= 5


def test_step_projection_counts_each_family_once():
    trace = load_trace(_capture("nsys", "joined", "eager"))
    assert len(project(trace, r"^step\[DECODE").step_names) == 5
    assert len(project(trace, r"^step\[EXTEND").step_names) == 1
