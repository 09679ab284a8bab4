"""The PR comment: a careful engineer's "Validation" section, written from the compare data."""
from __future__ import annotations

from urllib.parse import urlencode

from ..format import interval, level_pct, num, pct, series_label, trace_rank
from ..schemas import CompareOut

ICON = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "regression": "❌",
        "improvement": "🚀"}
NA = "–"


def marker(benchmark: str, baseline: str) -> str:
    return f"<!-- perfwarden:{benchmark}:{baseline} -->"


def render(cmp: CompareOut, dashboard_url: str | None = None, server_url: str | None = None) -> str:
    b, base = cmp.benchmark, cmp.baseline
    level = level_pct(cmp.alpha / cmp.looks)
    lines = [marker(b, base),
             f"## {ICON.get(cmp.verdict, '')} perfwarden: **{cmp.verdict.upper()}** — `{b}` vs "
             f"baseline `{base}`", ""]
    if cmp.baseline.startswith("experiment:"):
        lines += [f"Interleaved experiment `{cmp.baseline.split(':', 1)[1]}`: baseline and "
                  "candidate ran alternately on one host (ABBA BAAB ...); each change is the mean "
                  "of the blocks' candidate-minus-baseline differences.", ""]
    if cmp.vary:
        lines += [f"Varied on purpose: {', '.join(f'`{k}`' for k in cmp.vary)} (each row shows "
                  "baseline→candidate).", ""]
    regress = [m for m in cmp.metrics if m.verdict == "regression"]
    if regress:
        lines.append("**Regressions:** " + "; ".join(
            f"`{m.name}` {pct(m.delta_pct, NA)} ({series_label(m.series)})" for m in regress))
        lines.append("")
    lines += ["| metric | series | baseline mean | candidate mean | n (runs) base / cand | "
              f"change ({level} CI) | worse-side bound | threshold | verdict |",
              "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for m in cmp.metrics:
        exact = m.method == "exact"
        ci = "" if exact or m.ci_low_pct is None else f" ({interval(m.ci_low_pct, m.ci_high_pct)})"
        role = "" if m.role == "gate" else " (evidence)"
        lines.append(
            f"| `{m.name}`{role} | {series_label(m.series)} | {num(m.baseline.mean, missing=NA)} | "
            f"{num(m.candidate.mean, missing=NA)} | {m.baseline.n} ({m.baseline.runs}) / "
            f"{m.candidate.n} ({m.candidate.runs}) | {pct(m.delta_pct, NA)}{ci} | "
            f"{NA if exact else pct(m.bound_pct, NA)} | {m.threshold_pct:g}% | "
            f"{ICON.get(m.verdict, '')} {m.verdict} |")
    lines.append("")
    kv = [m for m in cmp.metrics if m.name == "kv_capacity_tokens"]
    if kv:
        lines.append("**KV-cache capacity:** " + "; ".join(
            f"{m.reason} ({series_label(m.series)})" for m in kv))
    gaps = [m for m in cmp.metrics if m.name == "aux_gap_mean_us"]
    td = cmp.trace_diff
    if gaps:
        lines.append("**Auxiliary-stream idle gap:** " + "; ".join(
            f"{num(m.baseline.median, 0, NA)} us → {num(m.candidate.median, 0, NA)} us"
            for m in gaps))
    elif td:
        g = {x["metric"]: x for x in td["gaps"]}.get("aux_gap_mean_us")
        if g and g["base"] is not None and g["candidate"] is not None:
            lines.append(f"**Auxiliary-stream idle gap:** {g['base']:.0f} us → "
                         f"{g['candidate']:.0f} us (from the attached traces)")
    if td and (td["base"].get("ordering") or td["candidate"].get("ordering")):
        b, c = td["base"], td["candidate"]
        lines.append(f"**Ordering check (routed experts):** {b.get('ordering') or NA} → "
                     f"{c.get('ordering') or NA}" + (f" ({c['ordering_reason']})"
                                                     if c.get("ordering_reason") else ""))
    dets = [(r.id, r.determinism) for r in cmp.candidate_runs if r.determinism]
    if dets:
        lines.append("**Determinism:** " + ", ".join(
            f"run {i}: {d['identical']}/{d['repeats']} bitwise identical" for i, d in dets))
    tok = sorted((m for m in cmp.metrics if m.name == "tok_s"
                  and m.series.get("batch_size") is not None),
                 key=lambda m: m.series.get("batch_size") or 0)
    if len({m.series.get("batch_size") for m in tok}) > 1:
        lines += ["", "**Batch-size matrix (tok/s):**", "",
                  "| M | baseline mean | candidate mean | change | verdict |",
                  "|---:|---:|---:|---:|---|"]
        for m in tok:
            lines.append(f"| {m.series.get('batch_size')} | {num(m.baseline.mean, missing=NA)} | "
                         f"{num(m.candidate.mean, missing=NA)} | {pct(m.delta_pct, NA)} | "
                         f"{ICON.get(m.verdict, '')} {m.verdict} |")
    if td and td.get("kernels"):
        lines += ["", "<details><summary>Kernels that changed most (per decode step, from the "
                  "attached traces)</summary>", "", "| kernel | base us | candidate us | change |",
                  "|---|---:|---:|---:|"]
        for k in td["kernels"][:8]:
            name = k["name"] if len(k["name"]) < 80 else k["name"][:77] + "..."
            lines.append(f"| `{name}` | {k['base_per_step_us']:.1f} | "
                         f"{k['candidate_per_step_us']:.1f} | {k['delta_per_step_us']:+.1f} |")
        lines += ["", "</details>"]
    base_url = dashboard_url or server_url  # the dashboard serves the trace files too
    if base_url and cmp.traces:
        sides = [("baseline", r) for r in cmp.baseline_runs] + \
                [("candidate", r) for r in cmp.candidate_runs]
        links = [f"[{side} run {r.id}{trace_rank(t.filename)}]({base_url.rstrip('/')}"
                 f"/api/v1/traces/{t.id})" for side, r in sides for t in cmp.traces.get(r.id, [])]
        if links:
            lines += ["", "**Traces:** " + ", ".join(links[:12])]
    lines.append("")
    for m in cmp.metrics:
        if m.verdict != "pass" and m.role == "gate":
            lines.append(f"- `{m.name}` ({series_label(m.series)}): {m.reason}")
    c = cmp.candidate_runs[0] if cmp.candidate_runs else None
    hw = c.hardware if c else {}
    lines += ["", f"Compared: candidate run(s) {', '.join(map(str, cmp.candidate_run_ids))}"
                  f" (commit `{(c.commit if c else None) or '?'}`) against baseline `{base}` "
                  f"run(s) {', '.join(map(str, cmp.baseline_run_ids)) or 'none'}; hardware "
                  f"{hw.get('gpu_count', '?')}x {hw.get('gpu', '?')}; {cmp.correction}, "
                  f"alpha {cmp.alpha:g}" + (f" over {cmp.looks} looks" if cmp.looks > 1 else "") +
                  f". `pass` means the one-sided {level} bound rules out a regression of the "
                  "threshold's size; metrics marked (evidence) explain and never decide."]
    if dashboard_url and cmp.baseline.startswith("experiment:"):
        lines.append(f"[Open the experiment in the dashboard]({dashboard_url.rstrip('/')}/experiments/"
                     f"{cmp.baseline.split(':', 1)[1]})")
    elif dashboard_url:
        q = {"benchmark": b, "baseline": base,
             "run_ids": ",".join(map(str, cmp.candidate_run_ids))}
        if cmp.vary:
            q["vary"] = ",".join(cmp.vary)
        lines.append(f"[Open the comparison in the dashboard]({dashboard_url.rstrip('/')}/compare?"
                     f"{urlencode(q)})")
    return "\n".join(lines) + "\n"
