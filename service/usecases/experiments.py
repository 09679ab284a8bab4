"""Interleaved A/B experiments: their runs by arm and block, and the blocked verdict
(spec/api.md v1.1, "Experiments"). The candidate arm is judged against the baseline arm block
by block: each block's difference cancels the drift of the machine."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy.orm import Session

from ..errors import Invalid, NotFound
from ..format import series_short
from ..repositories import runs as runs_repo
from ..schemas import FIXED_SERIES_KEYS, GateOut
from ..stats.blocked import assess_blocks, look_alpha
from ..stats.gate import Comparison, judge
from .verdicts import MetricDefinition, _metric, _series_desc, count_once, metric_definitions

ARMS = ("baseline", "candidate")


def _rows(session: Session, exp_id: str) -> list:
    rows = runs_repo.experiment_runs(session, exp_id)
    if not rows:
        raise NotFound(f"experiment {exp_id!r} not found", "experiment")
    return rows


def varied_keys(baseline_cfgs: list[dict], candidate_cfgs: list[dict]) -> list[str]:
    """Config keys the arms set apart: no value in common between the arms (e.g. the
    shared-expert order), so matching ignores them; keys swept within both arms (batch size)
    are not varied."""
    keys = {k for c in baseline_cfgs + candidate_cfgs for k in c}
    out = []
    for k in sorted(keys):
        a = {repr(c.get(k)) for c in baseline_cfgs}
        b = {repr(c.get(k)) for c in candidate_cfgs}
        if not a & b:
            out.append(k)
    return out


def judge_experiment(session: Session, exp_id: str, metrics: list[str] | None = None,
                     thresholds: dict[str, float] | None = None, vary: list[str] | None = None,
                     alpha: float = 0.05, max_looks: int = 1) -> GateOut:
    """The candidate arm against the baseline arm, series by series and block by block."""
    rows = _rows(session, exp_id)
    keys = {r.id: (r.benchmark_id, r.series_id, r.body_sha256) for r in rows}
    ids = {arm: count_once([r.id for r in rows if r.experiment_arm == arm], keys) for arm in ARMS}
    if not ids["baseline"] or not ids["candidate"]:
        raise Invalid(f"experiment {exp_id!r}: both arms need runs (baseline "
                      f"{len(ids['baseline'])}, candidate {len(ids['candidate'])})", "experiment")
    block_of = {r.id: r.experiment_block for r in rows}
    series = runs_repo.series_rows(session, {keys[i][1] for i in keys})
    cfg = {arm: [series[keys[i][1]].config for i in ids[arm]] for arm in ARMS}
    auto = varied_keys(cfg["baseline"], cfg["candidate"])
    for k in vary or []:
        if k in FIXED_SERIES_KEYS:
            raise Invalid(f"vary: {k!r} can never be varied", "vary")
    varied = sorted(set(auto) | set(vary or []))
    cand_metrics = runs_repo.metric_names(session, ids["candidate"])
    if metrics:
        missing = [m for m in metrics if m not in cand_metrics]
        if missing:
            raise Invalid(f"metrics: the candidate arm has no metric {missing[0]!r}", "metrics")
    defs = metric_definitions(session, sorted(set(cand_metrics) | set(metrics or [])))
    names = list(dict.fromkeys(metrics)) if metrics else [
        m for m in cand_metrics if m not in defs or defs[m].gated]
    samples = runs_repo.samples_of(session, ids["baseline"] + ids["candidate"], names)

    def matching(sid: int) -> tuple:
        s = series[sid]
        return (runs_repo.canonical({k: v for k, v in s.config.items() if k not in varied}),
                s.gpu, s.gpu_count)

    comparisons = []
    for sid in sorted({keys[i][1] for i in ids["candidate"]}):
        s = series[sid]
        desc = _series_desc(s)
        c_runs = [i for i in ids["candidate"] if keys[i][1] == sid]
        b_runs = [i for i in ids["baseline"] if matching(keys[i][1]) == matching(sid)]
        b_series = sorted({keys[i][1] for i in b_runs})
        for k in varied:
            if b_series:
                desc[k] = {"baseline": series[b_series[0]].config.get(k),
                           "candidate": s.config.get(k)}
        for name in names:
            d = defs.get(name, MetricDefinition("", "higher", 1.0, False, True))
            by_block: dict[int, dict[str, list[float]]] = defaultdict(dict)
            for arm, run_ids in (("baseline", b_runs), ("candidate", c_runs)):
                for i in run_ids:
                    if name in samples.get(i, {}):
                        by_block[block_of[i]].setdefault(arm, []).extend(samples[i][name])
            complete = sorted(b for b, v in by_block.items() if len(v) == 2)
            comparisons.append(Comparison(
                metric=name, unit=d.unit, direction=d.direction,
                threshold_pct=float((thresholds or {}).get(name, d.threshold_pct)),
                exact=d.exact, series=desc, series_id=sid,
                baseline=[by_block[b]["baseline"] for b in complete],
                candidate=[by_block[b]["candidate"] for b in complete],
                no_baseline_reason=None if complete else
                "no block holds both arms in this series (same config and GPU" +
                (f", ignoring {', '.join(varied)})" if varied else ")"),
                baseline_ids=tuple(i for i in b_runs if name in samples.get(i, {})),
                candidate_ids=tuple(i for i in c_runs if name in samples.get(i, {}))))
    level = look_alpha(alpha, max_looks)
    j = judge(comparisons, level,
              assessor=lambda c: assess_blocks(list(zip(c.baseline, c.candidate)), c.direction,
                                               level))
    return GateOut(verdict=j.verdict, benchmark=_benchmark_name(session, rows),
                   baseline=f"experiment:{exp_id}", baseline_run_ids=sorted(ids["baseline"]),
                   candidate_run_ids=ids["candidate"],
                   correction=j.correction + (f"; each of {max_looks} looks at alpha/{max_looks}"
                                              if max_looks > 1 else ""),
                   alpha=level, vary=varied, metrics=[_metric(r) for r in j.metrics])


def _benchmark_name(session: Session, rows: list) -> str:
    names = runs_repo.benchmark_names(session, {r.benchmark_id for r in rows})
    return ", ".join(sorted(names))


def show(session: Session, exp_id: str, alpha: float = 0.05) -> dict[str, Any]:
    """The experiment's runs by arm and block (with their run means, so drift is visible) and
    its verdict."""
    rows = _rows(session, exp_id)
    means = runs_repo.run_means(session, [r.id for r in rows], "tok_s")
    series = runs_repo.series_rows(session, {r.series_id for r in rows})
    varied = set(varied_keys([series[r.series_id].config for r in rows if r.experiment_arm == "baseline"],
                             [series[r.series_id].config for r in rows if r.experiment_arm == "candidate"]))

    def cell(sid: int) -> str:  # the run's cell without the keys the arms set apart
        s = series[sid]
        return series_short({k: v for k, v in s.config.items() if k not in varied}, s.gpu,
                            s.gpu_count)

    blocks: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: {a: [] for a in ARMS})
    order: dict[int, list[str]] = defaultdict(list)
    for r in rows:
        arm = r.experiment_arm or "baseline"
        blocks[r.experiment_block or 0][arm].append(
            {"run_id": r.id, "series_id": r.series_id, "cell": cell(r.series_id),
             "started_at": runs_repo.utc(r.started_at), "tok_s_mean": means.get(r.id)})
        if arm not in order[r.experiment_block or 0]:
            order[r.experiment_block or 0].append(arm)
    verdict = judge_experiment(session, exp_id, alpha=alpha)
    return {"id": exp_id, "benchmark": verdict.benchmark, "runs": len(rows),
            "blocks": [{"block": b, "order": order[b], **blocks[b]} for b in sorted(blocks)],
            "verdict": verdict}
