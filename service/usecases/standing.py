"""Where each benchmark stands: per series its baseline covers, the verdict of that series'
newest default-branch run against the benchmark's newest baseline. Stored as a summary
(usecases/summaries: the job that runs when runs arrive refreshes it) with the revision of the
runs it covers and the baseline, branch and alpha it was judged with, so the index page reads
one row per benchmark and runs no gate for a benchmark whose runs and baseline are unchanged."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from collectors.verdicts import IMPROVEMENT, INCONCLUSIVE, PASS, REGRESSION

from ..baselines import queries as baseline_repo
from ..curations import queries as curation_repo
from ..db import Session
from ..errors import DomainError
from ..format import series_label
from ..gate import verdicts
from ..gate.evidence import evidence
from ..gate.schemas import GateIn
from ..history.reads import default_branch
from ..repositories import summaries as summary_repo
from ..repositories import views as views_repo
from ..runs import queries as runs_repo

VERDICTS = "verdicts"  # the summary kind
METRIC = "tok_s"  # the metric the index judges
ORDER = (REGRESSION, INCONCLUSIVE, IMPROVEMENT, PASS)


def judged_with(b: Any, base: Any, alpha: float, curated: tuple[int, int] | None
                ) -> dict[str, Any]:
    """What a stored standing was judged against: a change to any of these makes it stale.
    `curated`: the benchmark's curations in force (curations.in_force_marks), so a mute set,
    withdrawn or expired is said at once, with no new run."""
    return {"baseline_id": base.id, "baseline": base.name,
            "baseline_at": runs_repo.utc(base.updated_at), "branch": default_branch(b),
            "alpha": alpha, "curated": list(curated or (0, 0)),
            "fields": 3}  # the fields a verdict entry holds: a new set restales


def marks(session: Session, b: Any) -> tuple[int, int] | None:
    """The benchmark's curations in force now, as judged_with holds them."""
    return curation_repo.in_force_marks(session, [b.id], datetime.now(timezone.utc)).get(b.id)


def current(row: Any, b: Any, base: Any, alpha: float, revision: tuple[int, int],
            curated: tuple[int, int] | None) -> bool:
    return row is not None and (row.runs, row.last_run_id) == revision and \
        row.body.get("judged_with") == judged_with(b, base, alpha, curated)


def judge(session: Session, b: Any, count: int, base: Any, alpha: float
          ) -> tuple[list[dict[str, Any]], str | None]:
    """For each series the baseline covers, the verdict of that series' newest default-branch
    run (one gate over all of them, never a run of an unrelated series), and why there is none,
    said as it is."""
    keys = runs_repo.run_keys(session, list(base.run_ids))
    latest_runs = views_repo.latest_runs_per_series(session, b.id, {k[1] for k in keys.values()},
                                                    default_branch(b))
    cand = [r for r in latest_runs if r.id not in keys]
    out: list[dict[str, Any]] = []
    no_verdict = None
    if cand:
        try:
            g = verdicts.gate(session, GateIn(benchmark=b.name, baseline=base.name,
                                              run_ids=[r.id for r in cand]), alpha)
        except DomainError as e:
            g = None
            no_verdict = f"no verdict: {e.message}"
        by_series = {r.series_id: r for r in cand}
        for m in g.metrics if g else []:
            if m.name != METRIC or m.series_id not in by_series:
                continue
            out.append({"series": series_label(m.series), "verdict": m.verdict,
                        "change": m.delta_pct, "run": by_series[m.series_id].id,
                        "ci_low": m.ci_low_pct, "ci_high": m.ci_high_pct, "keys": m.series,
                        "cause": evidence(g, m).text(code="") if g is not None else "",
                        "reason": m.reason, "muted": m.muted})
    others = count - len(keys)  # runs the baseline does not hold
    if not cand and others > 0:
        no_verdict = (f"no newer {default_branch(b)} run in the baseline's series; "
                      f"{others} other run{'s' if others != 1 else ''} in other series "
                      "or branches")
    elif cand and not out and no_verdict is None:
        no_verdict = "newer runs, but no tok/s verdict for them"
    return sorted(out, key=lambda v: (ORDER.index(v["verdict"]), v["series"])), no_verdict


def body(session: Session, b: Any, base: Any, alpha: float, count: int) -> dict[str, Any]:
    """The stored form: what it was judged with, the series verdicts, why there is none."""
    curated = marks(session, b)  # read before the gate: a curation added meanwhile restales
    series_verdicts, no_verdict = judge(session, b, count, base, alpha)
    return {"judged_with": judged_with(b, base, alpha, curated),
            "series_verdicts": series_verdicts,
            "no_verdict": no_verdict}


def refresh(session: Session, b: Any, base: Any, alpha: float, revision: tuple[int, int]
            ) -> dict[str, Any]:
    """Judge the benchmark now and store it (a reader that stored it first is kept)."""
    out = body(session, b, base, alpha, revision[0])
    summary_repo.put_once(session, b.id, VERDICTS, METRIC, revision, out,
                          datetime.now(timezone.utc))
    return out


def for_job(session: Session, b: Any, alpha: float, revision: tuple[int, int]
            ) -> dict[str, Any] | None:
    """The summaries job's part: the benchmark's standing against its newest baseline (None
    where it has none)."""
    base = baseline_repo.newest(session, [b.id]).get(b.id)
    return None if base is None else body(session, b, base, alpha, revision[0])
