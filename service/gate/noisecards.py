"""Noise cards (service/stats/noisecard.py) of series, from the newest CARD_RUNS runs of their
default-branch history of one metric, each run's trials as stored: shown on the series page, in
the compare answer and in the PR comment."""
from __future__ import annotations

from collections.abc import Iterable

from ..db import Session
from ..format import num, series_label
from ..history import reads as history
from ..history.schemas import NoiseCardOut, NoiseOut
from ..runs import queries as runs_repo
from ..stats import noisecard
from . import comparisons

CARD_RUNS = 60  # the newest runs of a history a card reads
CARDS_MAX = 8  # cards one answer carries at most (a batch-size matrix's series)


def cards(session: Session, bench_name: str, pairs: Iterable[tuple[int, str]],
          alpha: float = 0.05) -> list[NoiseCardOut]:
    """The cards of these (series, metric) pairs whose history holds runs, in the order given
    (at most CARDS_MAX)."""
    bench = history.get_benchmark(session, bench_name)
    wanted = list(dict.fromkeys(pairs))[:CARDS_MAX]
    defs = comparisons.metric_definitions(session, sorted({m for _, m in wanted}))
    out = []
    for sid, metric in wanted:
        d = defs.get(metric, comparisons.UNKNOWN)
        found = history.series_runs(session, bench, metric, series_id=sid, limit=CARD_RUNS)
        if not found or not found[0]["runs"]:
            continue
        s = found[0]
        ids = [r["id"] for r in s["runs"]]
        samples = runs_repo.samples_of(session, ids, [metric])
        runs = [samples[i][metric] for i in ids if samples.get(i, {}).get(metric)]
        c = noisecard.card(runs, d.direction, d.threshold_pct, d.exact, alpha, sid)
        label = series_label({**s["config"], "gpu": s["gpu"], "gpu_count": s["gpu_count"]})
        out.append(NoiseCardOut(
            series_id=sid, series=label, metric=metric, runs=c.runs,
            run_to_run_cv_pct=c.run_to_run_cv_pct, modes=c.modes,
            aa_false_alarm_pct={str(k): v for k, v in c.aa_false_alarm_pct.items()},
            aa_draws=c.aa_draws, detectable_pct={str(k): v for k, v in c.detectable_pct.items()},
            line=line(metric, label, c)))
    return out


def line(metric: str, label: str, c: noisecard.NoiseCard) -> str:
    """One sentence of the card."""
    parts = [f"{metric} of {label}: {c.runs} runs"]
    if c.run_to_run_cv_pct is not None:
        parts.append(f"run-to-run spread {num(c.run_to_run_cv_pct, 2)}%")
    if c.modes is not None:
        parts.append(f"{c.modes} clock mode{'s' if c.modes != 1 else ''}")
    if c.aa_false_alarm_pct:
        parts.append("A/A gates from its history say regression " + ", ".join(
            f"{num(v, 0)}% ({k} run{'s' if k != 1 else ''} a side)"
            for k, v in c.aa_false_alarm_pct.items()) + f" of {c.aa_draws}")
    if c.detectable_pct:
        parts.append("smallest change it detects " + ", ".join(
            f"{num(v, 2)}% ({k} run{'s' if k != 1 else ''} a side)"
            for k, v in c.detectable_pct.items()))
    return "; ".join(parts)


def noise(session: Session, bench_name: str, metric: str = "tok_s", branch: str | None = None,
          baseline: str | None = None) -> NoiseOut:
    """`GET /api/v1/noise`: the spread per series, and on the default branch each series' card."""
    out = history.noise(session, bench_name, metric, branch, baseline)
    if baseline is None and out.branch == history.default_branch(
            history.get_benchmark(session, bench_name)):
        out.cards = cards(session, bench_name, [(s.series_id, metric) for s in out.series])
    return out
