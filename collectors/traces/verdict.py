"""The ordering check's verdict and the one line that says why (spec/metrics.md, Ordering check
verdicts)."""
from __future__ import annotations


def ordering_verdict(res: dict) -> str:
    """`hazard` when a guarded kernel ran beside aux work or nothing orders it after aux work;
    `ok` when guarded kernels were found with neither, and the trace could tell: its guarded
    steps hold no auxiliary work at all, or their stream waits were checked; otherwise
    `unknown` (nothing guarded, no stream-wait records, or graph replays with no eager step to
    take their edges from)."""
    if res["violations"] or res.get("unordered"):
        return "hazard"
    if not res["guarded_kernels"]:
        return "unknown"
    if res.get("aux_ops_in_guarded_steps") == 0:
        return "ok"
    if res.get("graph_replay_kernels") and not res.get("reference_guarded_kernels"):
        return "unknown"
    return "ok" if res.get("sync_records") else "unknown"


def verdict_reason(res: dict) -> str:
    """One line that says why; for `unknown`, what to do to get an answer (spec/metrics.md, Ordering
    check verdicts)."""
    v = res.get("verdict") or ordering_verdict(res)
    if v == "hazard":
        parts = []
        if res["violations"]:
            parts.append(f"{res['violations']} guarded kernel(s) ran beside auxiliary work")
        if res.get("unordered"):
            parts.append(f"{res['unordered']} guarded launch(es) not ordered after the "
                         "auxiliary work in flight by a stream wait")
        return "; ".join(parts)
    if v == "ok":
        if res.get("aux_ops_in_guarded_steps") == 0:
            return "no auxiliary work in the guarded steps"
        return (f"none of the {res['guarded_kernels']} guarded kernel(s) ran beside auxiliary "
                f"work; {res.get('ordered_checked') or 0} launch(es) with auxiliary work in "
                "flight were ordered after it by a stream wait")
    if not res["guarded_kernels"]:
        what = " or ".join(f"{k} {res[k]!r}" for k in ("guarded_regex", "guard_range") if res.get(k))
        return (f"no kernel in the steps matched {what}: name the guarded kernels with "
                "--guard-kernels REGEX (the kernel table lists the names) or the NVTX range "
                "they are launched in with --guard-range REGEX")
    if not res.get("sync_records"):
        if "kineto" in (res.get("producer") or ""):
            return ("the trace has no CUDA sync events, so stream waits cannot be checked: "
                    "profile with experimental_config=torch._C._profiler._ExperimentalConfig("
                    "enable_cuda_sync_events=True) (perfwarden's torch profile pass sets it)")
        return ("the trace has no stream-wait records (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION): "
                "profile with nsys -t cuda")
    if res.get("graph_replay_kernels") and not res.get("reference_guarded_kernels"):
        return ("the guarded kernels are CUDA graph replays, which carry no stream waits: pass "
                "an eager trace of the same step with --reference FILE (or launch the step "
                "eagerly inside eager_reference_step_<i> ranges in the same trace)")
    return "the trace cannot tell"
