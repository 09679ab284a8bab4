"""Attribution over a set of runs that vary several config keys (spec/api.md, "Attribution"):
which key explains the run means, the trial spread, or non-identical repeats.

The runs are one branch's history under the history rule the gate uses (no pull-request runs,
experiment arms or bisect runs), of one GPU model and count: runs of several GPUs are never
mixed into one fit (name one with `gpu`). p-values are Holm-corrected across the keys."""
from __future__ import annotations

from collections import Counter

from ..db import Session
from ..errors import Invalid, NotFound
from ..history import reads as history
from ..runs import queries as runs_repo
from ..stats.attribution import Factor, RunFacts, attribute, finding
from .schemas import AttributionOut, FactorOut

# keys that describe the shape of the run rather than a choice under study
NOT_FACTORS = ("device", "steps", "layers", "hidden", "experts", "top_k", "dtype")


def factors_out(fs: list[Factor]) -> list[FactorOut]:
    return [FactorOut(key=f.key, levels=f.levels, effect=f.effect, p_value=f.p_value,
                      p_corrected=f.p_corrected, explains=f.explains,
                      level_values=f.level_values) for f in fs]


_CACHE: dict[tuple, AttributionOut | Invalid] = {}


def attribution(session: Session, benchmark: str, metric: str = "tok_s",
                labels: list[str] | None = None, branch: str | None = None,
                gpu: str | None = None) -> AttributionOut:
    """Kept per (benchmark, metric, labels, branch, run count, newest run id): a new or deleted
    run gives another key, so a kept answer is never stale (the fits cost ~100 ms at 3,000 runs)."""
    bench_id = runs_repo.benchmark_id(session, benchmark)
    if bench_id is None:
        raise NotFound(f"benchmark {benchmark!r} not found", "benchmark")
    # the branch as resolved: a changed default branch is another answer for the same runs
    resolved = branch or history.default_branch(history.get_benchmark(session, benchmark))
    key = (str(session.get_bind().engine.url), bench_id, metric, tuple(labels or ()), resolved,
           gpu, *runs_repo.fingerprint(session, bench_id))
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        try:
            _CACHE[key] = compute(session, bench_id, benchmark, metric, labels, branch, gpu)
        except Invalid as e:  # "too few runs", "no digests": the same answer until runs change
            _CACHE[key] = e
    kept = _CACHE[key]
    if isinstance(kept, Invalid):
        raise Invalid(kept.message, kept.field)
    return kept.model_copy(deep=True)


def gpu_name(gpu: str, count: int) -> str:
    """A GPU model and count as the API names it: `NVIDIA H200 x1`."""
    return f"{gpu or 'no GPU'} x{count}"


def history_runs(session: Session, benchmark: str, metric: str, labels: list[str] | None,
                 branch: str | None, gpu: str | None, largest_group: bool = False) -> list:
    """The runs an attribution fits: `branch`'s history (the benchmark's default branch when
    None), one record posted twice counted once, all of one GPU model and count (`gpu`; or,
    with `largest_group`, the one with the most runs)."""
    bench = history.get_benchmark(session, benchmark)
    rows = runs_repo.attribution_rows(session, bench.id, metric, labels or [],
                                      branch or history.default_branch(bench))
    seen: set[str] = set()
    kept = []
    for r in rows:
        if r.body_sha256 in seen:  # a record posted twice counts once
            continue
        seen.add(r.body_sha256)
        kept.append(r)
    counts = Counter(gpu_name(r.gpu, r.gpu_count) for r in kept)
    gpus = sorted(counts)
    if gpu is None and largest_group and len(gpus) > 1:
        gpu = max(gpus, key=lambda g: counts[g])  # the most runs; ties: the first by name
    if gpu is not None:
        kept = [r for r in kept if gpu in (r.gpu, gpu_name(r.gpu, r.gpu_count))]
        named = sorted({gpu_name(r.gpu, r.gpu_count) for r in kept})
        if len(named) > 1:  # a model named without its count: one model, several counts
            raise Invalid(f"{gpu} names {len(named)} GPU counts ({', '.join(named)}); "
                          "attribution never mixes them: name one", "gpu")
    elif len(gpus) > 1:
        raise Invalid(f"these runs are of {len(gpus)} GPU models or counts ({', '.join(gpus)}); "
                      "attribution never mixes them: name one with gpu (--gpu)", "gpu")
    return kept


def compute(session: Session, bench_id: int, benchmark: str, metric: str,
            labels: list[str] | None, branch: str | None, gpu: str | None = None
            ) -> AttributionOut:
    """The fits themselves (the API's answer; the stored summaries of usecases/summaries.py)."""
    facts_metric = "tok_s" if metric == "determinism" else metric
    facts = [run_facts(r) for r in history_runs(session, benchmark, facts_metric, labels, branch,
                                                 gpu)]
    if len(facts) < 3:
        raise Invalid(f"attribution needs at least 3 runs; {len(facts)} match", "benchmark")
    if metric == "determinism":
        if not any(f.repeats for f in facts):
            raise Invalid("determinism: none of these runs holds repeat digests", "metric")
        fs = attribute(facts, "determinism")
        return AttributionOut(benchmark=benchmark, metric=metric, runs=len(facts),
                              factors=factors_out(fs), finding=finding("determinism", fs))
    fs, spread = attribute(facts, "mean"), attribute(facts, "spread")
    return AttributionOut(benchmark=benchmark, metric=metric, runs=len(facts),
                          factors=factors_out(fs),
                          finding=finding("mean", fs, metric), spread_factors=factors_out(spread),
                          spread_finding=finding("spread", spread, metric))


def run_facts(r) -> RunFacts:  # noqa: ANN001 - a row of runs_repo.attribution_rows
    det = r.determinism or {}
    cfg = {k: v for k, v in r.config.items() if k not in NOT_FACTORS}
    # a single-trial run has no trial spread: its CV is missing, never 0
    cv = 100.0 * r.stdev / r.mean if r.stdev is not None and r.mean else None
    return RunFacts(cfg, r.mean, cv, det.get("identical"), det.get("repeats"))
