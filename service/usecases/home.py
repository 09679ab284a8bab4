"""The home page's story of each benchmark, beside its overview row: where the default
(newest) baseline's own series have no newer run, the newest other label judged against that
baseline, its series matched on the config keys the label sets apart (as `gate --vary` matches
them); and the benchmark's newest decisions: its experiments' verdicts and its stored matrix
explanation. Nothing here is fitted: the verdicts are the gate's, the explanation is stored."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .. import readcache
from ..baselines import queries as baseline_repo
from ..db import Session
from ..errors import DomainError
from ..gate import verdicts
from ..gate.comparisons import varied_keys
from ..gate.schemas import GateIn, GateOut
from ..repositories import series as series_repo
from ..repositories import summaries as summary_repo
from ..repositories import views as views_repo
from ..runs import queries as runs_repo
from . import summaries

LABEL_RUNS = 200  # the newest runs of a label judged on the home page
EXPERIMENTS = 3  # the newest experiments a benchmark's row links


@dataclass(frozen=True)
class LabelVerdict:
    """A label's runs against the baseline: the gate's answer, or why there is none."""

    label: str
    baseline: str
    run_ids: list[int]
    vary: list[str]
    answer: GateOut | None
    note: str | None = None


@dataclass(frozen=True)
class Decision:
    """A decision a benchmark's row links: an experiment (`name` its id, `verdict` its gate
    verdict, or None with `text` saying why) or the stored matrix explanation (`text` its
    decision's first sentence)."""

    kind: str  # "experiment" or "matrix"
    name: str
    verdict: str | None
    text: str


@dataclass(frozen=True)
class Story:
    label_verdict: LabelVerdict | None = None
    decisions: list[Decision] = field(default_factory=list)


def label_verdict(session: Session, bench_id: int, name: str, alpha: float
                  ) -> LabelVerdict | None:
    """The newest label outside the newest baseline, judged against it; None where the
    benchmark has no baseline or every labelled run is the baseline's."""
    base = baseline_repo.newest(session, [bench_id]).get(bench_id)
    if base is None:
        return None
    base_ids = list(base.run_ids)
    label, ids = views_repo.newest_label_runs(session, bench_id,
                                              views_repo.labels_of(session, base_ids), LABEL_RUNS)
    ids = [i for i in ids if i not in set(base_ids)]
    if label is None or not ids:
        return None
    keys = runs_repo.run_keys(session, base_ids + ids)
    series = series_repo.series_rows(session, {k.series_id for k in keys.values()})
    vary = varied_keys([series[keys[i].series_id].config for i in base_ids if i in keys],
                       [series[keys[i].series_id].config for i in ids])
    try:
        answer = verdicts.gate(session, GateIn(benchmark=name, baseline=base.name, run_ids=ids,
                                               vary=vary or None), alpha)
    except DomainError as e:
        return LabelVerdict(label, base.name, ids, vary, None, f"no verdict: {e.message}")
    return LabelVerdict(label, base.name, ids, vary, answer)


def _experiment_verdict(session: Session, exp_id: str, alpha: float, db: str,
                        revision: tuple[Any, ...]) -> Decision:
    """An experiment's gate verdict, kept per revision of its benchmark (views_repo.
    benchmark_revision), so a home view gates only the experiments whose benchmark changed."""

    def judge() -> Decision:
        try:
            return Decision("experiment", exp_id, verdicts.gate(
                session, GateIn(experiment=exp_id), alpha).verdict, "")
        except DomainError as e:
            return Decision("experiment", exp_id, None, e.message)

    return readcache.cached(("experiment verdict", db, exp_id, revision, alpha), judge)


def _matrix(name: str, explained: Any) -> list[Decision]:
    body = explained.body if explained is not None else None
    if not body or "error" in body or not body.get("decision"):
        return []
    return [Decision("matrix", name, None, str(body["decision"]).split("; ")[0])]


def stories(session: Session, names: list[str], judged: set[str], alpha: float
            ) -> dict[str, Story]:
    """Per benchmark name: the label verdict (only for those not in `judged`, whose baseline
    series already have a verdict on the overview) and the decisions (its newest experiments
    with their verdicts, then its stored matrix explanation). The decisions of every benchmark
    come from two statements; only the label verdicts and the experiments' verdicts gate, each
    kept per revision of the runs it judges."""
    ids = views_repo.benchmark_ids(session, names)
    experiments = views_repo.newest_experiments_of(session, EXPERIMENTS)
    explained = summary_repo.every(session, (summaries.EXPLAIN,), summaries.EXPLAINED)
    db, now = str(session.get_bind().engine.url), datetime.now(UTC)
    out = {}
    for name in names:
        bench_id = ids.get(name)
        if bench_id is None:
            continue
        exps = experiments.get(bench_id, [])
        revision = views_repo.benchmark_revision(session, bench_id, now) \
            if exps or name not in judged else ()
        lv = None if name in judged else readcache.cached(
            ("label verdict", db, bench_id, revision, alpha),
            functools.partial(label_verdict, session, bench_id, name, alpha))
        out[name] = Story(lv, [_experiment_verdict(session, e, alpha, db, revision) for e in exps]
                          + _matrix(name, explained.get((bench_id, summaries.EXPLAIN))))
    return out
