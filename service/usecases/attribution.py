"""Attribution over a set of runs that vary several config keys (spec/api.md v1.1,
"Attribution"): which key explains the run means, the trial spread, or non-identical repeats."""
from __future__ import annotations

from ..db import Session
from ..errors import Invalid, NotFound
from ..repositories import runs as runs_repo
from ..schemas import AttributionOut, FactorOut
from ..stats.attribution import Factor, RunFacts, attribute, finding

# keys that describe the shape of the run rather than a choice under study
NOT_FACTORS = ("device", "steps", "layers", "hidden", "experts", "top_k", "dtype")


def _factors(fs: list[Factor]) -> list[FactorOut]:
    return [FactorOut(key=f.key, levels=f.levels, effect=f.effect, p_value=f.p_value,
                      explains=f.explains, level_values=f.level_values) for f in fs]


_CACHE: dict[tuple, AttributionOut | Invalid] = {}


def attribution(session: Session, benchmark: str, metric: str = "tok_s",
                labels: list[str] | None = None, branch: str | None = None) -> AttributionOut:
    """Kept per (benchmark, metric, labels, branch, run count, newest run id): a new or deleted
    run gives another key, so a kept answer is never stale (the fits cost ~100 ms at 3,000 runs)."""
    bench_id = runs_repo.benchmark_id(session, benchmark)
    if bench_id is None:
        raise NotFound(f"benchmark {benchmark!r} not found", "benchmark")
    key = (str(session.get_bind().engine.url), bench_id, metric, tuple(labels or ()), branch,
           *runs_repo.fingerprint(session, bench_id))
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        try:
            _CACHE[key] = compute(session, bench_id, benchmark, metric, labels, branch)
        except Invalid as e:  # "too few runs", "no digests": the same answer until runs change
            _CACHE[key] = e
    kept = _CACHE[key]
    if isinstance(kept, Invalid):
        raise Invalid(kept.message, kept.field)
    return kept.model_copy(deep=True)


def compute(session: Session, bench_id: int, benchmark: str, metric: str,
            labels: list[str] | None, branch: str | None) -> AttributionOut:
    """The fits themselves (the API's answer; the stored summaries of usecases/summaries.py)."""
    facts_metric = "tok_s" if metric == "determinism" else metric
    rows = runs_repo.attribution_rows(session, bench_id, facts_metric, labels or [], branch)
    seen: set[str] = set()
    facts = []
    for r in rows:
        if r.body_sha256 in seen:  # a record posted twice counts once
            continue
        seen.add(r.body_sha256)
        det = r.determinism or {}
        cfg = {k: v for k, v in r.config.items() if k not in NOT_FACTORS}
        # a single-trial run has no trial spread: its CV is missing, never 0
        cv = 100.0 * r.stdev / r.mean if r.stdev is not None and r.mean else None
        facts.append(RunFacts(cfg, r.mean, cv, det.get("identical"), det.get("repeats")))
    if len(facts) < 3:
        raise Invalid(f"attribution needs at least 3 runs; {len(facts)} match", "benchmark")
    if metric == "determinism":
        if not any(f.repeats for f in facts):
            raise Invalid("determinism: none of these runs holds repeat digests", "metric")
        fs = attribute(facts, "determinism")
        return AttributionOut(benchmark=benchmark, metric=metric, runs=len(facts),
                              factors=_factors(fs), finding=finding("determinism", fs))
    fs, spread = attribute(facts, "mean"), attribute(facts, "spread")
    return AttributionOut(benchmark=benchmark, metric=metric, runs=len(facts), factors=_factors(fs),
                          finding=finding("mean", fs, metric), spread_factors=_factors(spread),
                          spread_finding=finding("spread", spread, metric))
