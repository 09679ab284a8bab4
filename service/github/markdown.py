"""The PR comment: a careful engineer's "Validation" section, written from the compare data
(the verdicts through their one view, service/gate/view.py); the check run and the job summary
take its pieces."""
from __future__ import annotations

from urllib.parse import quote, urlencode

from collectors.verdicts import FAIL, IMPROVEMENT, INCONCLUSIVE, PASS, REGRESSION

from ..format import hardware, interval, md, md_comment, num, pct, quantity, trace_rank
from ..gate.schemas import CompareOut, GateOut
from ..gate.view import GateView, view

ICON = {PASS: "✅", FAIL: "❌", INCONCLUSIVE: "⚠️", REGRESSION: "❌", IMPROVEMENT: "🚀"}
NA = "–"


def marker(benchmark: str, baseline: str) -> str:
    """The comment's hidden marker; names that could end the HTML comment are kept from it."""
    return f"<!-- perfwarden:{md_comment(benchmark)}:{md_comment(baseline)} -->"


def verdict_table(cmp: GateOut) -> list[str]:
    """The constant config keys once, then one row per metric verdict holding only the keys that
    differ between rows; under the verdicts of each series, its profiler evidence where there
    is some."""
    v = view(cmp)
    lines = []
    if v.common:
        lines += [f"Every row: {md(v.common_label, code=True)}", ""]
    show_series = any(row.differs for row in v.rows)
    head = ["metric"] + (["series"] if show_series else []) + [
        "baseline mean", "candidate mean", "n (runs) base / cand", f"change ({v.level} CI)",
        "worse-side bound", "threshold", "verdict"]
    lines += ["| " + " | ".join(head) + " |",
              "|" + "|".join(["---"] * (1 + show_series) + ["---:"] * 6 + ["---"]) + "|"]
    for row in v.rows:
        m, exact = row.metric, row.exact
        ci = "" if exact or m.ci_low_pct is None else f" ({interval(m.ci_low_pct, m.ci_high_pct)})"
        role = " (evidence)" if row.evidence_only else ""
        cells = [f"{md(m.name, code=True)}{role}"] + (
            [md(row.differs) if row.differs else NA] if show_series else []) + [
            md(quantity(m.baseline.mean, m.unit, missing=NA)),
            md(quantity(m.candidate.mean, m.unit, missing=NA)),
            f"{m.baseline.n} ({m.baseline.runs}) / {m.candidate.n} ({m.candidate.runs})",
            f"{pct(m.delta_pct, NA)}{ci}", NA if exact else pct(m.bound_pct, NA),
            f"{m.threshold_pct:g}%", f"{ICON.get(m.verdict, '')} {m.verdict}"
            + (" (muted: does not decide)" if m.muted else "")]
        lines.append("| " + " | ".join(cells) + " |")
        if row.evidence:
            lines.append(f"| ↳ evidence | {row.evidence.text()} |" + " |" * (len(head) - 2))
    lines.append("")
    if cmp.cause is not None:
        lines += [f"**Cause:** {md(cmp.cause.line)}", ""]
    if cmp.curations:  # what people decided about these series, and who
        lines += ["**Curation:**"] + [f"- {md(c.line)}" for c in cmp.curations] + [""]
    return lines


def headline(cmp: GateOut) -> str:
    v = view(cmp)
    return (f"{ICON.get(cmp.verdict, '')} perfwarden: **{md(v.word)}** — "
            f"{md(cmp.benchmark, code=True)} vs baseline {md(cmp.baseline, code=True)}"
            + (f" — {md(v.unknown)}" if v.unknown else ""))


def render(cmp: CompareOut, dashboard_url: str | None = None, server_url: str | None = None,
           query: dict[str, str] | None = None) -> str:
    v = view(cmp)
    lines = [marker(cmp.benchmark, cmp.baseline), f"## {headline(cmp)}", ""]
    lines += _preamble(cmp, v)
    lines += verdict_table(cmp)
    lines += _evidence(cmp, v)
    lines += _batch_matrix(cmp)
    lines += _noise(cmp)
    lines += kernel_table(cmp)
    lines += _trace_links(cmp, dashboard_url or server_url)  # the dashboard serves the traces too
    lines.append("")
    lines += reasons(cmp)
    lines += ["", _compared(cmp, v)]
    url = compare_url(cmp, dashboard_url, query)
    if url:
        what = "experiment" if cmp.baseline.startswith("experiment:") else "comparison"
        lines.append(f"[Open the {what} in the dashboard]({url})")
    return "\n".join(lines) + "\n"


def with_pending(body: str, note: str | None, then: str) -> str:
    """The comment with the pending-evidence note under its headline (the tables below lack
    the traces' evidence for now); `then`: what brings the evidence in."""
    if not note:
        return body
    head, rest = body.split("\n\n", 1)
    return f"{head}\n\n**{md(note[0].upper() + note[1:])}**: the tables below show it once " \
           f"they are; {then}.\n\n{rest}"


def _preamble(cmp: CompareOut, v: GateView) -> list[str]:
    """What was compared how (an experiment's blocks, keys varied on purpose) and the
    regressions, above the table."""
    lines: list[str] = []
    if cmp.baseline.startswith("experiment:"):
        lines += [f"Interleaved experiment {md(cmp.baseline.split(':', 1)[1], code=True)}: "
                  "baseline and "
                  "candidate ran alternately on one host (ABBA BAAB ...); each change is the mean "
                  "of the blocks' candidate-minus-baseline differences.", ""]
    if cmp.vary:
        lines += [f"Varied on purpose: {', '.join(md(k, code=True) for k in cmp.vary)} (each row shows "
                  "baseline→candidate).", ""]
    if v.regressions:
        lines.append("**Regressions:** " + "; ".join(
            f"{md(r.metric.name, code=True)} {pct(r.metric.delta_pct, NA)}{_which(r.differs)}"
            for r in v.regressions))
        lines.append("")
    return lines


def _evidence(cmp: CompareOut, v: GateView) -> list[str]:
    """KV-cache capacity, the routed experts' ordering check and determinism, one line each."""
    lines = []
    kv = [r for r in v.rows if r.metric.name == "kv_capacity_tokens"]
    if kv:
        lines.append("**KV-cache capacity:** " + "; ".join(
            f"{md(r.metric.reason)}{_which(r.differs)}" for r in kv))
    td = cmp.trace_diff
    if td and (td["base"].get("ordering") or td["candidate"].get("ordering")):
        bo, co = td["base"], td["candidate"]
        lines.append(f"**Ordering check (routed experts):** {md(bo.get('ordering') or NA)} → "
                     f"{md(co.get('ordering') or NA)}" + (f" ({md(co['ordering_reason'])})"
                                                          if co.get("ordering_reason") else ""))
    dets = [(r.id, r.determinism) for r in cmp.candidate_runs if r.determinism]
    if dets:
        lines.append("**Determinism:** " + ", ".join(
            f"run {i}: {d['identical']}/{d['repeats']} bitwise identical" for i, d in dets))
    return lines


def _noise(cmp: CompareOut) -> list[str]:
    """The noise card of each judged series: what its own history says a verdict can tell."""
    if not cmp.noise:
        return []
    return ["", "<details><summary>Noise of these series (their default-branch history)</summary>",
            ""] + [f"- {md(c.line)}" for c in cmp.noise] + ["", "</details>"]


def _batch_matrix(cmp: CompareOut) -> list[str]:
    """tok/s per batch size, where the comparison holds more than one."""
    tok = sorted((m for m in cmp.metrics if m.name == "tok_s"
                  and m.series.get("batch_size") is not None),
                 key=lambda m: m.series.get("batch_size") or 0)
    if len({m.series.get("batch_size") for m in tok}) <= 1:
        return []
    lines = ["", "**Batch-size matrix (tok/s):**", "",
             "| M | baseline mean | candidate mean | change | verdict |",
             "|---:|---:|---:|---:|---|"]
    for m in tok:
        lines.append(f"| {md(m.series.get('batch_size'))} | {num(m.baseline.mean, missing=NA)} | "
                     f"{num(m.candidate.mean, missing=NA)} | {pct(m.delta_pct, NA)} | "
                     f"{ICON.get(m.verdict, '')} {m.verdict} |")
    return lines


def _trace_links(cmp: CompareOut, base_url: str | None) -> list[str]:
    if not base_url or not cmp.traces:
        return []
    sides = [("baseline", r) for r in cmp.baseline_runs] + \
            [("candidate", r) for r in cmp.candidate_runs]
    links = [f"[{side} run {r.id}{trace_rank(t.filename)}]({base_url.rstrip('/')}"
             f"/api/v1/traces/{t.id})" for side, r in sides for t in cmp.traces.get(r.id, [])]
    return ["", "**Traces:** " + ", ".join(links[:12])] if links else []


def _compared(cmp: CompareOut, v: GateView) -> str:
    """The closing line: which runs, on what hardware, at which level."""
    c = cmp.candidate_runs[0] if cmp.candidate_runs else None
    hw = c.hardware if c else {}
    commit = f" (commit {md(c.commit, code=True)})" if c and c.commit else ""
    device = hardware(hw.get("gpu"), hw.get("gpu_count"))
    return (f"Compared: candidate run(s) {', '.join(map(str, cmp.candidate_run_ids))}"
            f"{commit} against baseline {md(cmp.baseline, code=True)} "
            f"run(s) {', '.join(map(str, cmp.baseline_run_ids)) or 'none'}; "
            f"{f'hardware {md(device)}; ' if device else ''}{md(cmp.correction)}, {v.alpha}"
            f". `pass` means the one-sided {v.level} bound rules out a regression of the "
            "threshold's size; metrics marked (evidence) explain and never decide.")


def kernel_table(cmp: GateOut) -> list[str]:
    """The kernels that changed significantly and materially across the runs' traces, with their
    intervals; where too few runs have traces to test, the kernels that changed most between
    one trace a side. Folded."""
    tested = [e for e in cmp.trace_evidence if not e.note]
    if tested:
        rows = [k for e in tested for k in e.kernels]
        return ["", "<details><summary>Kernels that changed significantly and materially (per "
                "decode step, across the runs' traces)</summary>", "",
                "| kernel | base us | candidate us | change | interval |", "|---|---:|---:|---:|---|",
                *[f"| {md(k.name[:77], code=True)} | {num(k.base_us, 1)} | "
                  f"{num(k.candidate_us, 1)} | {k.delta_us:+.1f} | "
                  + (f"{k.ci_low_us:+.1f} to {k.ci_high_us:+.1f} |" if k.ci_low_us is not None
                     and k.ci_high_us is not None else f"{k.status} |") for k in rows],
                "", "</details>"] if rows else []
    td = getattr(cmp, "trace_diff", None)
    if not td or not td.get("kernels"):
        return []
    lines = ["", "<details><summary>Kernels that changed most (per decode step, from the "
             "attached traces)</summary>", "", "| kernel | base us | candidate us | change |",
             "|---|---:|---:|---:|"]
    for k in td["kernels"][:8]:
        name = k["name"] if len(k["name"]) < 80 else k["name"][:77] + "..."
        lines.append(f"| {md(name, code=True)} | {num(k['base_per_step_us'], 1)} | "
                     f"{num(k['candidate_per_step_us'], 1)} | {k['delta_per_step_us']:+.1f} |")
    return lines + ["", "</details>"]


def reasons(cmp: GateOut) -> list[str]:
    return [f"- {md(r.metric.name, code=True)}{_which(r.differs)}: {md(r.reason)}"
            for r in view(cmp).reasons]


def _which(differs: str) -> str:
    """` (M=8)`: the keys that tell a verdict's series from the others (the rest are in the
    table's header line); empty where every row shares them."""
    return f" ({md(differs)})" if differs else ""


def compare_url(cmp: GateOut, dashboard_url: str | None,
                query: dict[str, str] | None = None) -> str | None:
    """The dashboard page of this verdict: the experiment's page, else /compare (with the
    request's `metrics` and `thresholds` in `query`, so the page judges what the gate judged)."""
    if not dashboard_url:
        return None
    root = dashboard_url.rstrip("/")
    if cmp.baseline.startswith("experiment:"):
        return f"{root}/experiments/{quote(cmp.baseline.split(':', 1)[1], safe='')}"
    q = {"benchmark": cmp.benchmark, "baseline": cmp.baseline,
         "run_ids": ",".join(map(str, cmp.candidate_run_ids))}
    if cmp.vary:
        q["vary"] = ",".join(cmp.vary)
    q.update(query or {})
    return f"{root}/compare?{urlencode(q)}"


def append_step_summary(cmp: GateOut, path: str | None) -> None:
    """Append the verdict and its table to GitHub Actions' job summary (GITHUB_STEP_SUMMARY)."""
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join([f"### {headline(cmp)}", "", *verdict_table(cmp)]) + "\n")
