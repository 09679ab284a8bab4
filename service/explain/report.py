"""Explain (spec/api.md, "Explain"): over a benchmark's factorial matrix, one report that joins
the attribution, the traces and the deterministic-mode runs into a decision.

1. the attribution (attribution/fit: one branch's history under the history rule, one GPU
   model and count, Holm-corrected p) of the runs not in deterministic mode names the key that
   explains the metric;
2. that key's levels split into outlier levels (for determinism: the less identical half of the
   range of level values; otherwise the one level whose effect the key explains, the largest
   standardized shift from the fit: stats/effects) and the others, and their stored
   trace summaries are compared: kernels present at every traced outlier level and at no other
   traced level, kernels gone there, and the kernels whose share of the traced kernel time changes most
   (a CPU trace's host operators stand in for kernels);
3. the deterministic-mode runs (config `deterministic=true`) of the same cells: how many are
   bitwise identical, or the command that would make them;
4. a decision sentence built from those numbers only; a significant interaction of two keys
   (type II ANOVA with the interaction term, Holm across the pairs) is named as such."""
from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from collectors.traces.diff import shown_names
from collectors.traces.summary import valid as valid_summary

from ..attribution import fit as attribution
from ..db import Session
from ..errors import Invalid
from ..history import reads as history
from ..runs import queries as runs_repo
from ..stats.attribution import Factor, RunFacts, attribute, level_key, outcome_of
from ..stats.effects import Interaction, interactions, outlier_level
from .schemas import DeterministicOut, ExplainOut, KernelChange, TraceDiffOut

ALPHA = 0.05
MODE_KEY = "deterministic"
SHOWN = 3  # kernels named in the decision sentence
CHANGES = 5  # share changes listed


def explain(session: Session, benchmark: str, metric: str = "determinism",
            labels: list[str] | None = None, branch: str | None = None,
            gpu: str | None = None, largest_group: bool = False) -> ExplainOut:
    """`largest_group`: where the runs are of several GPU models or counts, the one with the
    most runs (the stored report a page shows) instead of refusing."""
    facts_metric = "tok_s" if metric == "determinism" else metric
    rows = attribution.history_runs(session, benchmark, facts_metric, labels, branch, gpu,
                                    largest_group)
    if not rows:
        raise Invalid(f"no runs of {benchmark} measure {facts_metric}"
                      + (f" on {gpu}" if gpu else "") + " on the branch explained",
                      "gpu" if gpu else "metric")
    plain = [r for r in rows if not r.config.get(MODE_KEY)]
    modal = [r for r in rows if r.config.get(MODE_KEY)]
    facts = [attribution.run_facts(r) for r in plain]
    outcome = "determinism" if metric == "determinism" else "mean"
    usable = sum(outcome_of(f, outcome) is not None for f in facts)
    if usable < 3:
        what = "with 2 or more repeat digests " if outcome == "determinism" else ""
        raise Invalid(f"explain needs at least 3 runs not in deterministic mode {what}"
                      f"({len(plain)} not in deterministic mode, {usable} of them usable)",
                      "metric" if outcome == "determinism" else "benchmark")
    try:
        factors = attribute(facts, outcome)
    except ValueError as e:  # a design the model cannot fit
        raise Invalid(f"explain: these runs cannot be fitted ({e})", "benchmark") from None
    lead = factors[0] if factors else None
    if lead:
        bench = history.get_benchmark(session, benchmark)
        summaries = {i: v for i, s in runs_repo.trace_summaries(
            session, bench.id, [r.id for r in plain]).items() if (v := valid_summary(s)[0])}
        diff = _trace_diff([(r, summaries.get(r.id)) for r in plain], lead,
                           split_levels(lead, outcome, facts))
    else:
        diff = None
    det = _deterministic(plain, modal, lead, benchmark, labels)
    name = attribution.gpu_name(rows[0].gpu, rows[0].gpu_count) if rows else ""
    return ExplainOut(benchmark=benchmark, metric=metric, runs=len(plain), gpu=name,
                      factors=attribution.factors_out(factors), key=lead.key if lead else None,
                      diff=diff, deterministic=det,
                      decision=decision(metric, factors, diff, det,
                                        interactions(facts, outcome)))


def _level(value: Any) -> str:
    return str(value)


def _key_of(lead: Factor) -> str:
    return lead.key.split("/")[0]  # a confounded pair is named a/b; the first key is in configs


def split_levels(lead: Factor, outcome: str, facts: Sequence[RunFacts]
                 ) -> tuple[list[str], list[str]]:
    """(outlier levels, the others) of the explaining key, in the key's level order. A run
    mean or spread: the one level with the largest standardized shift from the fit of `facts`
    (a trend over a numeric key's values is not a shift); determinism: the less identical half
    of the range of level values."""
    order = [_level(v) for v in lead.levels]
    if outcome != "determinism":
        one = outlier_level(facts, outcome, lead.key)
        return ([one], [k for k in order if k != one]) if one in order else ([], order)
    vals = lead.level_values
    lo, hi = min(vals.values()), max(vals.values())
    if hi == lo:
        return [], order
    out = [k for k in order if k in vals and vals[k] < (lo + hi) / 2]
    return out, [k for k in order if k not in out]


def _ops(summary: dict | None) -> tuple[str, dict[str, float]]:
    """(what, name -> share of the traced kernel (or host operator) time) of one run's stored
    trace summary."""
    if not summary:
        return "", {}
    what, rows = "kernels", summary.get("kernels") or []
    if not rows and summary.get("host_ops"):
        what, rows = "host operators", summary["host_ops"]
    total: dict[str, float] = {}
    for k in rows:
        total[k["name"]] = total.get(k["name"], 0.0) + float(k.get("total_us") or 0.0)
    whole = sum(total.values())
    return (what, {n: t / whole for n, t in total.items()}) if whole > 0 else ("", {})


def _trace_diff(plain: Sequence[tuple[Any, dict | None]], lead: Factor,
                split: tuple[list[str], list[str]]) -> TraceDiffOut:
    """`plain`: (run row, its stored trace summary or None); `split`: (outlier levels, others)."""
    key = _key_of(lead)
    outliers, others = split
    per_level: dict[str, list[dict[str, float]]] = {}
    kinds: set[str] = set()
    for r, summary in plain:
        what, shares = _ops(summary)
        if shares:
            kinds.add(what)
            per_level.setdefault(_level(r.config.get(key)), []).append(shares)
    traced = [lv for lv in outliers + others if lv in per_level]
    t_out = [lv for lv in outliers if lv in per_level]
    t_ref = [lv for lv in others if lv in per_level]

    def present(levels: list[str]) -> list[set[str]]:
        return [set().union(*per_level[lv]) for lv in levels]

    def share(name: str, levels: list[str]) -> float:
        per = [sum(s.get(name, 0.0) for s in per_level[lv]) / len(per_level[lv]) for lv in levels]
        return sum(per) / len(per) if per else 0.0

    new: list[str] = []
    gone: list[str] = []
    both: list[str] = []
    if t_out and t_ref:
        out_sets, ref_sets = present(t_out), present(t_ref)
        every_out, any_out = set.intersection(*out_sets), set.union(*out_sets)
        every_ref, any_ref = set.intersection(*ref_sets), set.union(*ref_sets)
        new, gone = sorted(every_out - any_ref), sorted(every_ref - any_out)
        both = sorted(any_out & any_ref)
    shown = shown_names(new + gone + both)

    def rows(names: list[str], limit: int | None = None) -> list[KernelChange]:
        out = [KernelChange(name=n, shown=shown[n], outlier_share=share(n, t_out),
                            reference_share=share(n, t_ref)) for n in names]
        out.sort(key=lambda k: -abs(k.outlier_share - k.reference_share))
        return out[:limit] if limit else out

    return TraceDiffOut(key=key, outlier_levels=outliers, reference_levels=others,
                        traced_levels=traced, what="/".join(sorted(kinds)) or "kernels",
                        only_at_outliers=rows(new), gone_at_outliers=rows(gone),
                        share_changes=rows(both, CHANGES))


def _cell(config: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in config.items() if k != MODE_KEY))


def _deterministic(plain: Sequence, modal: Sequence, lead: Factor | None, benchmark: str,
                   labels: list[str] | None) -> DeterministicOut:
    """The deterministic-mode runs of the matrix's own cells, or the command that makes them."""
    cells = {_cell(r.config) for r in plain}
    same = [r for r in modal if _cell(r.config) in cells
            and int((r.determinism or {}).get("repeats") or 0) >= 2]  # one repeat proves nothing
    key = _key_of(lead) if lead else None
    levels = sorted({_level(r.config.get(key)) for r in same}, key=_level_order(lead)) \
        if key else []
    reps = [(r.determinism or {}) for r in same]
    return DeterministicOut(
        runs=len(same), identical_runs=sum(d.get("identical") == d.get("repeats") for d in reps),
        repeats=sum(int(d.get("repeats") or 0) for d in reps),
        identical_repeats=sum(int(d.get("identical") or 0) for d in reps), at_levels=levels,
        command=None if same else deterministic_command(plain, benchmark, labels))


def _level_order(lead: Factor | None):  # noqa: ANN202 - a sort key
    order = [_level(v) for v in lead.levels] if lead else []
    return lambda lv: order.index(lv) if lv in order else len(order)


# config keys of the built-in decode benchmark and the `collect decode` options that set them;
# a key of the first kind takes one value a command, one of the second a list
SINGLE_OPTIONS = (("device", "--device"), ("tp", "--tp"), ("steps", "--steps"),
                  ("layers", "--layers"), ("routed_kernel", "--routed-kernel"),
                  ("threads", "--threads"))
SHAPE_KEYS = ("hidden", "experts", "top_k", "dtype")  # ModelShape fields a decode config holds


def _shown(v: Any) -> str:
    return ("on" if v else "off") if isinstance(v, bool) else str(v)


def deterministic_command(plain: Sequence, benchmark: str, labels: list[str] | None
                          ) -> str | None:
    """The one `collect decode` command that runs the matrix's cells in deterministic mode,
    every value quoted for a shell; None where no one command can (a config key `collect
    decode` does not set, or two values of a key one command takes once)."""
    known = {k for k, _ in SINGLE_OPTIONS} | set(SHAPE_KEYS) | {
        "batch_size", "shared_experts", "cuda_graphs", MODE_KEY}
    values: dict[str, list[Any]] = {}
    for r in plain:
        if set(r.config) - known:
            return None
        for k in known - {MODE_KEY}:
            v = r.config.get(k, "bmm" if k == "routed_kernel" else None)
            if v is not None and v not in values.setdefault(k, []):
                values[k].append(v)
    if any(len(values.get(k) or []) > 1 for k in [k for k, _ in SINGLE_OPTIONS] + list(SHAPE_KEYS)):
        return None
    one = {k: v[0] for k, v in values.items() if v}
    parts = ["perfwarden", "collect", "decode"]
    for k, opt in SINGLE_OPTIONS:
        if k in one and not (k == "routed_kernel" and one[k] == "bmm"):
            parts += [opt, _shown(one[k])]
    shape = {k: one[k] for k in SHAPE_KEYS if k in one}
    if shape:
        parts += ["--shape", json.dumps(shape, separators=(",", ":"))]
    if values.get("batch_size"):
        parts += ["--batch-sizes", ",".join(_shown(v) for v in sorted(values["batch_size"],
                                                                      key=level_key))]
    if values.get("shared_experts"):
        parts += ["--shared-experts", ",".join(_shown(v) for v in values["shared_experts"])]
    graphs = values.get("cuda_graphs") or []
    if graphs:
        parts += ["--graphs", "both" if len(graphs) > 1 else _shown(graphs[0])]
    parts += ["--deterministic", "on", "--benchmark", benchmark]
    if labels:
        parts += ["--label", labels[0]]
    return " ".join(shlex.quote(p) for p in parts)


def _p(f: Factor) -> str:
    return "-" if f.p_corrected is None else format(f.p_corrected, ".2g")


def _names(changes: Sequence[KernelChange]) -> str:
    names = [f"`{k.shown}`" for k in changes[:SHOWN]]
    more = len(changes) - SHOWN
    text = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return text + (f" (and {more} more)" if more > 0 else "")


def decision(metric: str, factors: Sequence[Factor], diff: TraceDiffOut | None,
             det: DeterministicOut, pairs: Sequence[Interaction] = ()) -> str:
    """The decision sentence: what follows which key, what the traces show at its outlier
    levels, what deterministic mode gives, which pairs of keys interact (significant after Holm
    across the pairs: a key without a main effect of its own that interacts is never called not
    the cause), and which keys are not the cause."""
    if not factors:
        return "the runs do not differ in any config key: nothing to explain"
    lead, rest = factors[0], factors[1:]
    what = "non-identical repeats" if metric == "determinism" else f"{metric} run means"
    values = {v for f in factors for v in f.level_values.values()}
    if len(values) == 1:  # every level of every key alike: nothing varies to be explained
        same = "every repeat is bitwise identical" if metric == "determinism" and values == {1.0} \
            else f"every level of every key has the same {what}"
        return f"{same} over these runs: no config key to blame; {_det_clause(det)}"
    significant = lead.p_corrected is not None and lead.p_corrected < ALPHA
    joint = [x for x in pairs if x.p_corrected < ALPHA]
    paired = {k for x in joint for k in x.keys}
    if significant:
        parts = [f"{what} follow {lead.key} (explains {100 * lead.explains:.0f}%, p={_p(lead)})"]
    else:
        parts = [f"no config key explains the {what} (the largest share: {lead.key}, "
                 f"{100 * lead.explains:.0f}%, p={_p(lead)})"]
    if diff is not None and diff.outlier_levels:
        parts.append(_trace_clause(diff))
    parts.append(_det_clause(det))
    parts += [f"{x.name} interact (explains {100 * x.explains:.0f}% of what the keys alone leave, "
              f"p={x.p_corrected:.2g}): the effect of {x.keys[0]} depends on {x.keys[1]}"
              for x in joint]
    for f in rest:
        if f.p_corrected is not None and f.p_corrected < ALPHA:
            parts.append(f"{f.key} also explains {100 * f.explains:.0f}% (p={_p(f)})")
        elif _key_of(f) in paired:  # no main effect, yet it acts through the interaction
            parts.append(f"{f.key} alone explains {100 * f.explains:.0f}% (p={_p(f)})")
        else:
            parts.append(f"{f.key} explains {100 * f.explains:.0f}% (p={_p(f)}): {f.key} is not "
                         "the cause")
    return "; ".join(parts)


def _trace_clause(diff: TraceDiffOut) -> str:
    traced_out = [lv for lv in diff.outlier_levels if lv in diff.traced_levels]
    traced_ref = [lv for lv in diff.reference_levels if lv in diff.traced_levels]
    untraced = [lv for lv in diff.outlier_levels + diff.reference_levels
                if lv not in diff.traced_levels]
    if not traced_out or not traced_ref:
        return f"no traces to compare at {diff.key}={'/'.join(untraced)} (profile those cells)"
    at, ref, what = f"{diff.key}={'/'.join(traced_out)}", "/".join(traced_ref), diff.what
    note = f" ({diff.key}={'/'.join(untraced)} not traced)" if untraced else ""
    if diff.only_at_outliers:
        return f"at {at} the {what} {_names(diff.only_at_outliers)} appear, absent at {ref}{note}"
    if diff.share_changes:
        k = diff.share_changes[0]
        return (f"at {at} no {what} appear that are absent at {ref}; `{k.shown}` changes most: "
                f"{100 * k.outlier_share:.0f}% of {what} time vs {100 * k.reference_share:.0f}%"
                f"{note}")
    return f"the traces of {at} and {ref} hold the same {what}{note}"


def _det_clause(det: DeterministicOut) -> str:
    if not det.runs and det.command:
        return f"deterministic mode: no runs of these cells (`{det.command}` makes them)"
    if not det.runs:
        return ("deterministic mode: no runs of these cells (run each cell again with "
                "`--deterministic on`)")
    return (f"deterministic mode: {det.identical_runs}/{det.runs} runs bitwise identical "
            f"({det.identical_repeats}/{det.repeats} repeats)")
