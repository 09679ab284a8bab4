"""The home page's view model: per benchmark, one answer to "are we slower than the baseline?"
(the overview's series verdicts, or the newest label's verdict against the baseline) with each
series' change, interval, verdict and cause line, and the decisions it links. The template
only spells what this decides."""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from service.db import Session
from service.format import interval, pct, series_label, split_series
from service.gate import view as gate_view
from service.usecases import home, overview, summaries


@dataclass(frozen=True)
class SeriesLine:
    series: str
    verdict: str
    change: str
    ci: str
    cause: str  # the profiler evidence of its series, "" where there is none
    href: str
    muted: str = ""  # why, by whom and until when the metric does not decide ("" where it does)


@dataclass(frozen=True)
class Answer:
    """The verdict a row shows: what was judged (`what`), the overall word, its series."""

    what: str
    verdict: str
    href: str
    lines: list[SeriesLine] = field(default_factory=list)
    note: str = ""


@dataclass(frozen=True)
class Link:
    text: str
    href: str
    verdict: str | None = None


@dataclass(frozen=True)
class Row:
    base: overview.IndexRow
    answer: Answer | None
    decisions: list[Link]


def compare_href(benchmark: str, baseline: str, run_ids: list[int], vary: list[str]) -> str:
    q = {"benchmark": benchmark, "baseline": baseline,
         "run_ids": ",".join(str(i) for i in run_ids)}
    if vary:
        q["vary"] = ",".join(vary)
    return "/compare?" + urlencode(q)


def _label_answer(name: str, lv: home.LabelVerdict, why: str | None) -> Answer:
    """The newest label's verdict, said as standing in for the baseline series' own (`why`
    they have none)."""
    href = compare_href(name, lv.baseline, lv.run_ids, lv.vary)
    what = (f"{why}; the newest label judged instead: " if why else "") + \
        f"label {lv.label} ({len(lv.run_ids)} runs) vs baseline {lv.baseline}" + (
            f", varying {', '.join(lv.vary)}" if lv.vary else "")
    if lv.answer is None:
        return Answer(what, "", href, note=lv.note or "")
    gv = gate_view.view(lv.answer)
    lines = []
    for r in gv.rows:
        if r.metric.name != "tok_s":
            continue
        ev = next((x.evidence for x in gv.rows if x.series == r.series and x.evidence), None)
        lines.append(SeriesLine(r.differs or r.series, r.metric.verdict, pct(r.metric.delta_pct),
                                interval(r.metric.ci_low_pct, r.metric.ci_high_pct, "—"),
                                ev.text(code="") if ev else "", href, r.metric.muted or ""))
    return Answer(what, gv.word, href, lines)


def _overview_answer(r: overview.IndexRow) -> Answer | None:
    if not r.baseline:
        return None
    _, differs = split_series([v.get("keys", {}) for v in r.series_verdicts])
    lines = [SeriesLine(series_label(d) if d else v["series"], v["verdict"], pct(v["change"]),
                        interval(v.get("ci_low"), v.get("ci_high"), "—"), v.get("cause", ""),
                        compare_href(r.name, r.baseline, [v["run"]], []), v.get("muted") or "")
             for v, d in zip(r.series_verdicts, differs)]
    what = f"newest {'run' if len(lines) == 1 else 'runs'} of each series vs baseline {r.baseline}"
    return Answer(what, "", "", lines,
                  "" if lines else (r.no_verdict or "no run after the baseline's"))


@dataclass(frozen=True)
class Listing:
    """One page of home rows and how many benchmarks match in all."""

    rows: list[Row]
    total: int


def rows(session: Session, recompute: summaries.Recompute, alpha: float,
         only: str | None = None, offset: int = 0, limit: int | None = None,
         match: str | None = None) -> Listing:
    page = overview.index_page(session, recompute, alpha, offset, limit, match, only)
    base_rows = page.rows
    stories = home.stories(session, [r.name for r in base_rows],
                           {r.name for r in base_rows if r.series_verdicts}, alpha)
    out = []
    for r in base_rows:
        st = stories.get(r.name, home.Story())
        answer = _label_answer(r.name, st.label_verdict, r.no_verdict) if st.label_verdict \
            else _overview_answer(r)
        links = [Link(f"experiment {d.name}" + ("" if d.verdict else f": {d.text}"),
                      f"/experiments/{d.name}", d.verdict) if d.kind == "experiment" else
                 Link(f"matrix: {d.text}", f"/benchmarks/{r.name}/matrix")
                 for d in st.decisions]
        out.append(Row(r, answer, links))
    return Listing(out, page.total)


def row_of(session: Session, recompute: summaries.Recompute, alpha: float, name: str
           ) -> Row | None:
    """One benchmark's home row (its verdict and decisions), for its own page: the same answer
    the home page gives, never a second way to work it out."""
    return next(iter(rows(session, recompute, alpha, only=name).rows), None)
