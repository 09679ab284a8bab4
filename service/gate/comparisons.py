"""THE place that builds comparisons (spec/api.md, "Gate"): it matches series and picks metrics for
every asker (gate, /compare, experiments, pages, CLI, PR comment). A `Selection` (baseline runs or
an experiment's arms in blocks; candidate runs; vary; metrics; thresholds; alpha; looks) goes in,
`Comparisons` (one `Comparison` per metric and series) come out, and `judged()` hands them to
service/stats/gate.judge once, at the level in use (alpha / looks)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from collectors.configkeys import IDENTITY_KEYS
from collectors.metrics import EVIDENCE, GATE, UNKNOWN_THRESHOLD_PCT, latency_family, lookup, role_of

from ..baselines import named as baselines
from ..curations import marks as curations
from ..db import Session
from ..errors import Invalid, NotFound
from ..history import reads as history
from ..repositories import series as series_repo
from ..runs import queries as runs_repo
from ..runs import queries_plans as plans_repo
from ..runs.unknown import check_unknown, knows, unvaried
from ..schemas import FIXED_SERIES_KEYS
from ..stats.blocked import assess_blocks, look_alpha
from ..stats.gate import Comparison, Judgement, judge
from .schemas import GateIn

if TYPE_CHECKING:
    from ..models import Series

ARMS = ("baseline", "candidate")
# the newest runs of a series' history that give the spread of spec/api.md, Few baseline runs
HISTORY_RUNS = 30


@dataclass(frozen=True)
class MetricDefinition:
    unit: str
    direction: str
    threshold_pct: float
    exact: bool
    role: str  # GATE or EVIDENCE


UNKNOWN = MetricDefinition("", "higher", UNKNOWN_THRESHOLD_PCT, False, GATE)


@dataclass(frozen=True)
class Selection:
    """What to compare. Either `benchmark` + `baseline` + `run_ids`, or `experiment`."""

    benchmark: str | None = None
    baseline: str | None = None
    run_ids: tuple[int, ...] = ()
    experiment: str | None = None
    metrics: tuple[str, ...] = ()  # named metrics are gating for this request
    thresholds: Mapping[str, float] = field(default_factory=dict)
    vary: tuple[str, ...] = ()
    alpha: float = 0.05
    looks: int = 1  # asked for; an experiment's stored plan wins

    def planned(self, plan: Any) -> Selection:
        """As an experiment's stored plan (an ExperimentPlan, or None) says: its looks, and what
        the request leaves out of the question its runner asked (metrics, thresholds, vary)."""
        if plan is None:
            return self
        q = plan.question or {}
        return replace(self, looks=plan.looks or self.looks, metrics=self.metrics or tuple(
            dict.fromkeys(q.get("metrics", ()))), vary=self.vary or tuple(dict.fromkeys(q.get("vary", ()))),
            thresholds={**q.get("thresholds", {}), **self.thresholds})

    @classmethod
    def of(cls, req: GateIn, alpha: float) -> Selection:
        return cls(benchmark=req.benchmark, baseline=req.baseline, run_ids=tuple(req.run_ids or ()),
                   experiment=req.experiment, metrics=tuple(dict.fromkeys(req.metrics or ())),
                   thresholds=dict(req.thresholds or {}), vary=tuple(dict.fromkeys(req.vary or ())),
                   alpha=alpha, looks=req.max_looks)


@dataclass(frozen=True)
class Comparisons:
    """Every comparison of one request, and what the answer says about how they were made."""

    benchmark: str
    baseline: str  # the reference as asked, or "experiment:ID"
    baseline_ids: list[int]
    candidate_ids: list[int]
    vary: list[str]
    alpha: float
    looks: int
    blocked: bool  # an experiment: judged block by block
    items: list[Comparison]

    @property
    def level(self) -> float:
        """The level each look is tested at, so that all looks together keep alpha."""
        return look_alpha(self.alpha, self.looks)


def metric_definitions(session: Session, names: Sequence[str]) -> dict[str, MetricDefinition]:
    """The registry module for known metrics, the registry table for ones registered at ingest."""
    out = {}
    registered = runs_repo.registered_metrics(session, list(names))
    for n in names:
        spec = lookup(n)
        if spec is not None:
            out[n] = MetricDefinition(spec.unit, spec.direction, spec.threshold_pct, spec.exact,
                                      role_of(n))
        elif n in registered:
            r = registered[n]
            out[n] = MetricDefinition(r.unit, r.direction, r.threshold_pct, r.exact,
                                      role_of(n, r.gated))
    return out


def count_once(ids: Sequence[int], keys: Mapping[int, runs_repo.RunKey],
               exclude: set[str] | None = None) -> list[int]:
    """Each record once: runs with the same body (a retried post, a re-ingested file) count as
    the first of them; runs whose body is in `exclude` are dropped."""
    seen = set(exclude or ())
    out = []
    for i in ids:
        if keys[i].body_sha256 not in seen:
            seen.add(keys[i].body_sha256)
            out.append(i)
    return out


def series_desc(s: Series) -> dict[str, Any]:
    """A series as the answers show it: its config and GPUs."""
    return {**s.config, "gpu": s.gpu, "gpu_count": s.gpu_count}


def nearest_reason(cand: Series, base: Sequence[Series], vary: Sequence[str]) -> str:
    """Which keys set a candidate series apart from the nearest baseline series (spec/api.md
    spec/api.md, Engine identity): ": no baseline run with tp=4; the baseline has tp=8"."""
    if not base:
        return ""
    mine = {k: v for k, v in series_desc(cand).items() if k not in vary}

    def differing(b: Series) -> list[str]:
        theirs = {k: v for k, v in series_desc(b).items() if k not in vary}
        return sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))

    near = min(base, key=lambda b: (len(differing(b)), b.id))
    theirs = series_desc(near)
    keys = differing(near)

    def show(cfg: dict[str, Any]) -> str:
        return ", ".join(f"{k}={cfg[k]}" if k in cfg else f"no {k}" for k in keys)

    return f": no baseline run with {show(mine)}; the baseline has {show(theirs)}"




def check_identity(baseline: Mapping[int, Mapping[str, Any]],
                   candidate: Mapping[int, Mapping[str, Any]], vary: Sequence[str],
                   sides: tuple[str, str] = ("baseline", "candidate"), field: str = "run_ids"
                   ) -> None:
    """Invalid (422, one line naming the key and both values) when, for an identity key the
    request does not vary, every run of one side that knows it differs from every run of the
    other side that knows it: runs of two servers. A key a run does not know (no `model` in an
    old record) is no difference; a side holding several values (a sweep of GPU counts) is
    matched series by series."""
    for key in IDENTITY_KEYS:
        if key in vary:
            continue
        known = [{i: d[key] for i, d in side.items() if knows(d, key)}
                 for side in (baseline, candidate)]
        if not known[0] or not known[1]:
            continue
        values = [{repr(v) for v in k.values()} for k in known]
        if values[0] & values[1]:
            continue
        (b_id, b_val), (c_id, c_val) = min(known[0].items()), min(known[1].items())
        how = "name it with --vary to compare across it" if key not in FIXED_SERIES_KEYS \
            else "they are never compared"
        raise Invalid(f"{key}: {sides[0]} run {b_id} has {key}={b_val!r} and {sides[1]} run "
                      f"{c_id} has {key}={c_val!r}: runs of differing {key} are not pooled "
                      f"({how})", field, code="identity_differs")


def varied_keys(baseline_cfgs: Sequence[dict], candidate_cfgs: Sequence[dict]) -> list[str]:
    """Config keys an experiment's arms set apart: no value in common between the arms (e.g.
    the shared-expert order), so matching ignores them; keys swept within both arms (batch
    size) are not varied."""
    keys = {k for c in list(baseline_cfgs) + list(candidate_cfgs) for k in c}
    out = []
    for k in sorted(keys):
        a = {repr(c.get(k)) for c in baseline_cfgs}
        b = {repr(c.get(k)) for c in candidate_cfgs}
        if not a & b:
            out.append(k)
    return out


def _pick(session: Session, cand_ids: list[int], asked: tuple[str, ...], who: str
          ) -> tuple[list[str], dict[str, MetricDefinition]]:
    """The metrics to compare and their definitions: the named ones (all gating), else every
    metric of the candidate runs, gating ones first, evidence beside them."""
    cand_metrics = runs_repo.metric_names(session, cand_ids)
    missing = [m for m in asked if m not in cand_metrics]
    if missing:
        raise Invalid(f"metrics: {who} {'has' if who.startswith('the') else 'have'} no metric "
                      f"{missing[0]!r}", "metrics")
    defs = metric_definitions(session, sorted(set(cand_metrics) | set(asked)))
    if asked:
        return list(asked), {m: replace(defs.get(m, UNKNOWN), role=GATE) for m in asked}
    defs = {m: _in_family(m, d, cand_metrics) for m, d in defs.items()}
    gating = [m for m in cand_metrics if defs.get(m, UNKNOWN).role == GATE]
    evidence = [m for m in cand_metrics if defs.get(m, UNKNOWN).role == EVIDENCE]
    return gating + evidence, {m: defs.get(m, UNKNOWN) for m in gating + evidence}


def _in_family(name: str, d: MetricDefinition, present: Sequence[str]) -> MetricDefinition:
    """A latency family (TTFT, TPOT, ITL, E2EL) is judged by its median: a family's mean is
    evidence where the family's median is among the compared metrics (the tails already are,
    by the registry's roles)."""
    fam = latency_family(name)
    if fam is not None and fam[1] == "mean" and f"{fam[0]}_ms_median" in present:
        return MetricDefinition(d.unit, d.direction, d.threshold_pct, d.exact, EVIDENCE)
    return d


def _check_vary(vary: Sequence[str]) -> None:
    for k in vary:
        if k in FIXED_SERIES_KEYS:
            raise Invalid(f"vary: {k!r} can never be varied", "vary")


def _matcher(series: Mapping[int, Series], vary: Sequence[str]):
    def key(sid: int) -> tuple[str, str, int]:
        s = series[sid]
        return (runs_repo.canonical(unvaried(s.config, vary)), s.gpu, s.gpu_count)
    return key


def build(session: Session, sel: Selection) -> Comparisons:
    """The comparisons a selection asks for (spec/api.md "Gate", "Experiments")."""
    _check_vary(sel.vary)
    c = _experiment(session, sel) if sel.experiment is not None else _against_baseline(session, sel)
    return replace(c, items=curations.muted(session, c.items))


def judged(c: Comparisons) -> Judgement:
    """The comparisons judged once, at the level in use: runs against runs, or an experiment's
    blocks (each block's candidate against its baseline)."""
    if not c.blocked:
        return judge(c.items, c.level)
    level = c.level
    return judge(c.items, level, assessor=lambda x: assess_blocks(
        list(zip(x.baseline, x.candidate)), x.direction, level))


def _against_baseline(session: Session, sel: Selection) -> Comparisons:
    if sel.benchmark is None or sel.baseline is None or not sel.run_ids:
        raise Invalid("give benchmark, baseline and run_ids", "body")
    bench = history.get_benchmark(session, sel.benchmark)
    base_ref_ids = baselines.resolve(session, bench.id, sel.benchmark, sel.baseline)
    asked = list(dict.fromkeys(sel.run_ids))
    keys = runs_repo.run_keys(session, asked + base_ref_ids)
    for rid in asked:
        if rid not in keys or keys[rid].benchmark_id != bench.id:
            raise NotFound(f"run {rid} not found in {sel.benchmark}", "run_ids")
    cand_ids = count_once(asked, keys)
    base_ids = count_once(sorted(i for i in base_ref_ids if i in keys), keys,
                          exclude={keys[i].body_sha256 for i in asked})
    series = series_repo.series_rows(session, {keys[i].series_id for i in cand_ids + base_ids})
    check_identity({i: series_desc(series[keys[i].series_id]) for i in base_ids},
                   {i: series_desc(series[keys[i].series_id]) for i in cand_ids}, sel.vary)
    names, defs = _pick(session, cand_ids, sel.metrics, "candidate runs")
    samples = runs_repo.samples_of(session, cand_ids + base_ids, names)
    vary = list(sel.vary)
    matching = _matcher(series, vary)
    items: list[Comparison] = []
    few: dict[int, tuple[int, str]] = {}  # item -> (series, metric) whose spread is the history's
    for sid in sorted({keys[i].series_id for i in cand_ids}):
        s = series[sid]
        desc = series_desc(s)
        c_runs = [i for i in cand_ids if keys[i].series_id == sid]
        b_runs = [i for i in base_ids if matching(keys[i].series_id) == matching(sid)]
        b_series = sorted({keys[i].series_id for i in b_runs})
        why = None if b_runs else _unmatched(
            s, [series[b] for b in sorted({keys[i].series_id for i in base_ids})], c_runs[0], vary)
        if vary and b_series:
            for k in vary:
                desc[k] = {"baseline": series[b_series[0]].config.get(k), "candidate": s.config.get(k)}
            if len(b_series) > 1:
                why = (f"the baseline holds several values of {', '.join(vary)} "
                       f"({'; '.join(str(series[b].config.get(k)) for b in b_series for k in vary)}); "
                       "gate one of them with a baseline of its runs")
                b_runs = []
        # an unmatched series is said once, not once per metric
        for name in names if b_runs or not names else names[:1]:
            d = defs[name]
            c_ids = [i for i in c_runs if name in samples.get(i, {})]
            b_ids = [i for i in b_runs if name in samples.get(i, {})]
            if 0 < len(b_ids) < 3 and d.role == GATE and not d.exact:
                few[len(items)] = (keys[b_ids[0]].series_id, name)
            items.append(Comparison(
                metric=name, unit=d.unit, direction=d.direction,
                threshold_pct=float(sel.thresholds.get(name, d.threshold_pct)), exact=d.exact,
                series=desc, series_id=sid, baseline=[samples[i][name] for i in b_ids],
                candidate=[samples[i][name] for i in c_ids],
                no_baseline_reason=why or (f"baseline runs of this series have no {name}"
                                           if not b_ids else None),
                baseline_ids=tuple(b_ids), candidate_ids=tuple(c_ids), role=d.role))
    _with_history_spread(session, bench, items, few, set(cand_ids) | set(base_ids))
    return Comparisons(sel.benchmark, sel.baseline, sorted(base_ids), cand_ids, vary, sel.alpha,
                       1, False, items)


def _unmatched(s: Series, base: Sequence[Series], c_id: int, vary: Sequence[str]) -> str:
    """Why a candidate series has no baseline run (refused: unknown.check_unknown)."""
    check_unknown(series_desc(s), [series_desc(b) for b in base], c_id, vary)
    return "no baseline run in this series (same config and GPU" + (
        f", ignoring {', '.join(vary)})" if vary else ")") + nearest_reason(s, base, vary)


def _with_history_spread(session: Session, bench: history.BenchmarkRow, items: list[Comparison],
                         few: dict[int, tuple[int, str]], exclude: set[int]) -> None:
    """The history spread of every few-run comparison of the request (item -> its series and
    metric), in one query; from an expected change point on where one is in force."""
    if few:
        pairs = list(set(few.values()))
        spread = history.recent_means(session, bench, pairs, exclude=exclude, limit=HISTORY_RUNS,
                                      since=curations.history_since(session, pairs))
        for at, pair in few.items():
            items[at] = replace(items[at], history=tuple(spread[pair]))


def _experiment(session: Session, sel: Selection) -> Comparisons:
    assert sel.experiment is not None
    exp_id = sel.experiment
    rows = runs_repo.experiment_runs(session, exp_id)
    if not rows:
        raise NotFound(f"experiment {exp_id!r} not found", "experiment")
    keys = {r.id: runs_repo.RunKey(r.benchmark_id, r.series_id, r.body_sha256) for r in rows}
    ids = {arm: count_once([r.id for r in rows if r.experiment_arm == arm], keys) for arm in ARMS}
    if not ids["baseline"] or not ids["candidate"]:
        raise Invalid(f"experiment {exp_id!r}: both arms need runs (baseline "
                      f"{len(ids['baseline'])}, candidate {len(ids['candidate'])})", "experiment")
    block_of = {r.id: r.experiment_block for r in rows}
    sel = sel.planned(plans_repo.plans(session, {exp_id}).get(exp_id))
    series = series_repo.series_rows(session, {keys[i].series_id for i in keys})
    arm_desc = {arm: {i: series_desc(series[keys[i].series_id]) for i in ids[arm]} for arm in ARMS}
    check_identity(arm_desc["baseline"], arm_desc["candidate"], sel.vary,
                   ("baseline arm", "candidate arm"), "experiment")
    cfg = {arm: [series[keys[i].series_id].config for i in ids[arm]] for arm in ARMS}
    varied = sorted(set(varied_keys(cfg["baseline"], cfg["candidate"])) | set(sel.vary))
    names, defs = _pick(session, ids["candidate"], sel.metrics, "the candidate arm")
    samples = runs_repo.samples_of(session, ids["baseline"] + ids["candidate"], names)
    matching = _matcher(series, varied)
    items = []
    for sid in sorted({keys[i].series_id for i in ids["candidate"]}):
        s = series[sid]
        desc = series_desc(s)
        c_runs = [i for i in ids["candidate"] if keys[i].series_id == sid]
        b_runs = [i for i in ids["baseline"] if matching(keys[i].series_id) == matching(sid)]
        b_series = sorted({keys[i].series_id for i in b_runs})
        for k in varied:
            if b_series:
                desc[k] = {"baseline": series[b_series[0]].config.get(k),
                           "candidate": s.config.get(k)}
        for name in names:
            d = defs[name]
            by_block: dict[int, dict[str, list[float]]] = {}
            for arm, run_ids in (("baseline", b_runs), ("candidate", c_runs)):
                for i in run_ids:
                    if name in samples.get(i, {}):
                        by_block.setdefault(block_of[i], {}).setdefault(arm, []).extend(
                            samples[i][name])
            complete = sorted(b for b, v in by_block.items() if len(v) == 2)
            items.append(Comparison(
                metric=name, unit=d.unit, direction=d.direction,
                threshold_pct=float(sel.thresholds.get(name, d.threshold_pct)),
                exact=d.exact, series=desc, series_id=sid,
                baseline=[by_block[b]["baseline"] for b in complete],
                candidate=[by_block[b]["candidate"] for b in complete],
                no_baseline_reason=None if complete else
                "no block holds both arms in this series (same config and GPU" +
                (f", ignoring {', '.join(varied)})" if varied else ")"),
                baseline_ids=tuple(i for i in b_runs if name in samples.get(i, {})),
                candidate_ids=tuple(i for i in c_runs if name in samples.get(i, {})),
                role=d.role))
    names_of = runs_repo.benchmark_names(session, {r.benchmark_id for r in rows})
    return Comparisons(", ".join(sorted(names_of)), f"experiment:{exp_id}",
                       sorted(ids["baseline"]), ids["candidate"], varied, sel.alpha, sel.looks, True,
                       items)
