"""The gate's answer as a reader sees it, worked out once for every output format: the text
table of `perfwarden gate` (gate/report.py), the PR comment, check run and job summary
(github/markdown.py) and the dashboard's compare page render from this view and derive none of it
themselves. Each renderer only spells it in its own format (escaping, alignment, markers for a
missing figure)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collectors.verdicts import PASS, REGRESSION

from ..format import level_pct, series_label, settle_unknown, split_series, unknown_keys
from .evidence import Evidence, evidence, last_of_series
from .schemas import GateOut, MetricVerdict


@dataclass(frozen=True)
class VerdictRow:
    """One metric verdict. `series`: its whole series label; `differs`: only the keys that tell
    its series from the other rows' ("" where every row shares them: the view's `common`
    says them once); `exact`: an exact figure, with no interval and no bound; `evidence`: the
    profiler evidence of its series, under the last row of that series (None on the others);
    `reason`: why it holds the gate up (a gate metric that did not pass), else None;
    `spread`: where its run-to-run spread came from, where that is not the baseline's runs."""

    metric: MetricVerdict
    series: str
    differs: str
    exact: bool
    evidence: Evidence | None
    reason: str | None
    spread: str | None

    @property
    def evidence_only(self) -> bool:
        """An evidence metric explains and never decides."""
        return self.metric.role != "gate"


@dataclass(frozen=True)
class GateView:
    """The overall verdict (`verdict`; `word`: as the headline says it), the confidence level
    each interval is at (alpha over the looks), `alpha` said in words, the series keys every
    row shares (`common`, its label `common_label`) and the rows in the answer's order."""

    answer: GateOut
    verdict: str
    word: str
    level: str
    alpha: str
    common: dict[str, Any]
    common_label: str
    rows: list[VerdictRow]
    unknown: str  # what the compared runs do not know of their server, said beside the verdict
    _by_metric: dict[int, VerdictRow] = field(repr=False)

    def row(self, m: MetricVerdict) -> VerdictRow:
        """The row of one of the answer's metric verdicts."""
        return self._by_metric[id(m)]

    @property
    def reasons(self) -> list[VerdictRow]:
        """The rows that hold the gate up, each with its reason."""
        return [r for r in self.rows if r.reason is not None]

    @property
    def regressions(self) -> list[VerdictRow]:
        return [r for r in self.rows if r.metric.verdict == REGRESSION]


def _spread(m: MetricVerdict) -> str | None:
    if m.spread_from == "history":
        return f"run-to-run spread from the series' history ({m.spread_runs} runs)"
    if m.spread_from == "candidate":
        return (f"run-to-run spread from the candidate's {m.spread_runs} runs (wider than the "
                "series' history)")
    return None


def _unknown(answer: GateOut) -> str:
    """`model unknown, tp unknown: ...` where a compared series does not know which server it
    measured (and the request does not vary the key), else ""."""
    keys = list(dict.fromkeys(k for m in answer.metrics if m.baseline.runs
                              for k in unknown_keys(m.series) if k not in answer.vary))
    if not keys:
        return ""
    return (f"{', '.join(f'{k} unknown' for k in keys)}: the runs compared may be of different "
            f"servers ({settle_unknown(keys)})")


def view(answer: GateOut) -> GateView:
    common, diffs = split_series([m.series for m in answer.metrics])
    rows = [VerdictRow(
        metric=m, series=series_label(m.series), differs=series_label(diff) if diff else "",
        exact=m.method == "exact",
        evidence=evidence(answer, m) if last_of_series(answer.metrics, i) else None,
        reason=m.reason if m.verdict != PASS and m.role == "gate" else None,
        spread=_spread(m)) for i, (m, diff) in enumerate(zip(answer.metrics, diffs))]
    alpha = f"alpha {answer.alpha:g}" + (f" over {answer.looks} looks" if answer.looks > 1 else "")
    return GateView(answer=answer, verdict=answer.verdict, word=answer.verdict.upper(),
                    level=level_pct(answer.alpha / answer.looks), alpha=alpha, common=common,
                    common_label=series_label(common) if common else "", rows=rows,
                    unknown=_unknown(answer),
                    _by_metric={id(m): r for m, r in zip(answer.metrics, rows)})
