"""Kernel names are normalized across producers: the same TP2 graph step captured by Kineto and by
nsys shares 26 of its 27 kernel keys (5 raw names), so their diff pairs the kernels up instead of
showing every templated kernel as gone and new."""
from __future__ import annotations

from collections import Counter

import pytest

from collectors.traces import analyze_files
from collectors.traces.diff import diff_summaries
from collectors.traces.names import kernel_key
from tests.conftest import H200

KINETO = [H200 / "resident" / "torch" / "traces" / f"trace_M1_rank{r}.json.gz" for r in (0, 1)]
NSYS = H200 / "resident" / "nsys" / "traces" / "overlap-graphs.sqlite"


@pytest.mark.parametrize("nsys, kineto", [
    ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, "
     "at::native::ArgMaxOps<float>, unsigned int, long, (int)4, (int)4>>(T3)",
     "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
     "at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(at::native::ReduceOp<float, "
     "at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)"),
    ("void <unnamed>::softmax_warp_forward<float, float, float, (int)4, (bool)0, (bool)0>(T2 *, "
     "const T1 *, int, int, int, const bool *, int, bool)",
     "void (anonymous namespace)::softmax_warp_forward<float, float, float, 4, false, false>"
     "(float*, float const*, int, int, int, bool const*, int, bool)"),
    ("void at::native::vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<"
     "c10::BFloat16>, std::array<char *, (unsigned long)3>>(int, T2, T3)",
     "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<"
     "c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
     "std::array<char*, 3ul>)"),
])
def test_one_key_for_both_spellings(nsys, kineto):
    assert kernel_key(nsys) == kernel_key(kineto)


def test_template_values_still_tell_kernels_apart():
    assert kernel_key("void f<(int)4>(T1)") != kernel_key("void f<6>(float)")


def test_kineto_against_nsys_of_one_step_pairs_the_kernels():
    k, n = analyze_files(KINETO), analyze_files([NSYS])
    raw = {x["name"] for x in k["kernels"]} & {x["name"] for x in n["kernels"]}
    keys = {kernel_key(x["name"]) for x in k["kernels"]} & {kernel_key(x["name"]) for x in n["kernels"]}
    assert len(raw) == 5 and len(keys) == 26
    status = Counter(r["status"] for r in diff_summaries(k, n, limit=100)["kernels"])
    assert status["gone"] == status["new"] == 1  # memcpy32_post (Kineto) against an nsys memcpy
