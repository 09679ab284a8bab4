"""Which host ranges are the steps (spec/metrics.md, Steps in real engines' traces).

Without `--step-regex`, the first family whose ranges a trace holds is its step range. Where the
names tell prefill from decode, `steps` counts the decode ranges and `prefill_steps` the others:

- `decode_step`: this project's `decode_step_<i>`, and `prefill_step` (a generate loop's
  prompt step beside its `decode_step` ranges) as its prefill.
- `sglang`: `step[DECODE bs=N]`, `step[EXTEND bs=N toks=M]`, `step[TARGET_VERIFY bs=N]`,
  `step[DRAFT_EXTEND bs=N]`, ... (its `build_step_span_name`; a draft model's forward is
  `draft step[...]`; with detailed annotations more `key=value` fields follow `bs=N`); prefill:
  `EXTEND`, `MIXED`, `*PREFILL*`.
- `vllm`: `execute_context_N(T)_generation_M(T)`, `execute_T_context_N(...)_generation_M(...)`
  (`annotate_profile`), and newer vLLM's `execute_new_N_cached_M`; prefill: `context_N` or
  `new_N` with N > 0 (a mixed step counts as prefill).
- `pytorch`: `ProfilerStep#N`; cannot tell (`prefill_steps` is null).

A step is a host range: it counts whether or not device work ran in it (a CPU trace has none).

A vLLM trace also holds `ProfilerStep#N` (its worker calls `profiler.step()` each iteration):
the order above makes the engine's own range win.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .options import Options


@dataclass(frozen=True)
class Family:
    name: str
    any_regex: str  # every step range of the family
    decode_regex: str  # the decode steps (all of them where the names cannot tell)
    prefill_regex: str | None  # the others; None where the names cannot tell


_VLLM_CTX = r"execute_(?:\d+_)?context_"
FAMILIES: tuple[Family, ...] = (
    Family("decode_step", r"decode_step|prefill_step", r"decode_step", r"prefill_step"),
    Family("sglang", r"^(?:draft )?step\[[A-Z_]+ bs=\d+",
           r"^(?:draft )?step\[(?!EXTEND\b|MIXED\b|[A-Z_]*PREFILL)[A-Z_]+ bs=\d+",
           r"^(?:draft )?step\[(?:EXTEND|MIXED|[A-Z_]*PREFILL[A-Z_]*) bs=\d+"),
    Family("vllm", rf"^(?:{_VLLM_CTX}\d+\(.*\)_generation_\d+\(|execute_new_\d+_cached_\d+$)",
           rf"^(?:{_VLLM_CTX}0\(.*\)_generation_\d+\(|execute_new_0_cached_\d+$)",
           rf"^(?:{_VLLM_CTX}[1-9]\d*\(.*\)_generation_\d+\(|execute_new_[1-9]\d*_cached_\d+$)"),
    Family("pytorch", r"^ProfilerStep#\d+$", r"^ProfilerStep#\d+$", None),
)
_COMPILED = [(f, re.compile(f.any_regex)) for f in FAMILIES]
# what a loader keeps when the step range is still to be chosen
ANY_FAMILY = "|".join(f"(?:{f.any_regex})" for f in FAMILIES)


@dataclass(frozen=True)
class StepChoice:
    regex: str  # the ranges `steps` counts
    source: str  # "--step-regex", "auto: sglang", ... or "auto: none found"
    prefill_regex: str | None = None


def detect(range_names: Iterable[str]) -> Family | None:
    """The first family (in FAMILIES order) with a range in the trace."""
    seen = [False] * len(_COMPILED)
    for nm in set(range_names):
        for i, (_, rx) in enumerate(_COMPILED):
            if not seen[i] and rx.search(nm):
                seen[i] = True
        if seen[0]:
            break
    for i, (fam, _) in enumerate(_COMPILED):
        if seen[i]:
            return fam
    return None


def choose(range_names: Iterable[str], step_regex: str | None) -> StepChoice:
    if step_regex:
        return StepChoice(step_regex, "--step-regex")
    fam = detect(range_names)
    if fam is None:
        return StepChoice(FAMILIES[0].decode_regex, "auto: none found")
    return StepChoice(fam.decode_regex, f"auto: {fam.name}", fam.prefill_regex)


def keep_regex(step_regex: str | None, *extra: str | None) -> str:
    """The host ranges a loader must keep: the step ranges (every family while the choice is
    open) and the extra phases (guard ranges, reference steps)."""
    parts = [step_regex or ANY_FAMILY, *[x for x in extra if x]]
    return "|".join(f"(?:{p})" for p in parts)


def resolve(opts: Options, range_names: Iterable[str]) -> Options:
    """Options with the step range chosen for this trace (a no-op once chosen)."""
    if opts.step_source:
        return opts
    c = choose(range_names, opts.step_regex)
    return replace(opts, step_regex=c.regex, step_source=c.source, prefill_regex=c.prefill_regex)


def family_names() -> str:
    return ("decode_step, SGLang step[DECODE bs=N]/step[EXTEND ...], vLLM "
            "execute_..._context_N(...)_generation_N(...), ProfilerStep#N")
