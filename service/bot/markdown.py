"""The PR comment: a careful engineer's "Validation" section, written from the compare data."""
from __future__ import annotations

from urllib.parse import urlencode

from ..gate_report import series_label

ICON = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "regression": "❌",
        "improvement": "🚀"}


def marker(benchmark: str, baseline: str) -> str:
    return f"<!-- perfwarden:{benchmark}:{baseline} -->"


def _n(v, d=2):
    return "–" if v is None else f"{v:,.{d}f}"


def _p(v):
    return "–" if v is None else f"{v:+.2f}%"


def render(cmp: dict, dashboard_url: str | None = None, server_url: str | None = None) -> str:
    b, base = cmp["benchmark"], cmp["baseline"]
    verdict = cmp["verdict"]
    lines = [marker(b, base),
             f"## {ICON.get(verdict, '')} perfwarden: **{verdict.upper()}** — `{b}` vs baseline "
             f"`{base}`", ""]
    regress = [m for m in cmp["metrics"] if m["verdict"] == "regression"]
    if regress:
        lines.append("**Regressions:** " + "; ".join(
            f"`{m['name']}` {_p(m['delta_pct'])} ({series_label(m['series'])})" for m in regress))
        lines.append("")
    lines += ["| metric | series | baseline mean | baseline median | candidate mean | candidate "
              "median | n (runs) base / cand | change (95% CI) | threshold | verdict |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for m in cmp["metrics"]:
        ci = "" if m["ci_low_pct"] is None or m["method"] == "exact" else \
            f" ({m['ci_low_pct']:+.2f}..{m['ci_high_pct']:+.2f}%)"
        lines.append(
            f"| `{m['name']}` | {series_label(m['series'])} | {_n(m['baseline']['mean'])} | "
            f"{_n(m['baseline']['median'])} | {_n(m['candidate']['mean'])} | "
            f"{_n(m['candidate']['median'])} | {m['baseline']['n']} ({m['baseline']['runs']}) / "
            f"{m['candidate']['n']} ({m['candidate']['runs']}) | {_p(m['delta_pct'])}{ci} | "
            f"{m['threshold_pct']:g}% | {ICON.get(m['verdict'], '')} {m['verdict']} |")
    lines.append("")
    kv = [m for m in cmp["metrics"] if m["name"] == "kv_capacity_tokens"]
    if kv:
        lines.append("**KV-cache capacity:** " + "; ".join(
            f"{m['reason']} ({series_label(m['series'])})" for m in kv))
    gaps = [m for m in cmp["metrics"] if m["name"] == "aux_gap_mean_us"]
    td = cmp.get("trace_diff")
    if gaps:
        lines.append("**Auxiliary-stream idle gap:** " + "; ".join(
            f"{_n(m['baseline']['median'], 0)} us → {_n(m['candidate']['median'], 0)} us"
            for m in gaps))
    elif td:
        g = {x["metric"]: x for x in td["gaps"]}.get("aux_gap_mean_us")
        if g and g["base"] is not None and g["candidate"] is not None:
            lines.append(f"**Auxiliary-stream idle gap:** {g['base']:.0f} us → "
                         f"{g['candidate']:.0f} us (from the attached traces)")
    dets = [(r["id"], r["determinism"]) for r in cmp.get("candidate_runs", []) if r.get("determinism")]
    if dets:
        lines.append("**Determinism:** " + ", ".join(
            f"run {i}: {d['identical']}/{d['repeats']} bitwise identical" for i, d in dets))
    matrix = sorted({m["series"].get("batch_size") for m in cmp["metrics"]
                     if m["name"] == "tok_s" and m["series"].get("batch_size") is not None})
    if len(matrix) > 1:
        lines += ["", "**Batch-size matrix (tok/s):**", "",
                  "| M | baseline median | candidate median | change | verdict |",
                  "|---:|---:|---:|---:|---|"]
        for m in sorted((m for m in cmp["metrics"] if m["name"] == "tok_s"),
                        key=lambda m: m["series"].get("batch_size") or 0):
            lines.append(f"| {m['series'].get('batch_size')} | {_n(m['baseline']['median'])} | "
                         f"{_n(m['candidate']['median'])} | {_p(m['delta_pct'])} | "
                         f"{ICON.get(m['verdict'], '')} {m['verdict']} |")
    if td and td.get("kernels"):
        lines += ["", "<details><summary>Kernels that changed most (per decode step, from the "
                  "attached traces)</summary>", "", "| kernel | base us | candidate us | change |",
                  "|---|---:|---:|---:|"]
        for k in td["kernels"][:8]:
            name = k["name"] if len(k["name"]) < 80 else k["name"][:77] + "..."
            lines.append(f"| `{name}` | {k['base_per_step_us']:.1f} | "
                         f"{k['candidate_per_step_us']:.1f} | {k['delta_per_step_us']:+.1f} |")
        lines += ["", "</details>"]
    if server_url and cmp.get("traces"):
        links = [f"[{t['filename']}]({server_url.rstrip('/')}/api/v1/traces/{t['id']})"
                 for ts in cmp["traces"].values() for t in ts]
        lines += ["", "**Traces:** " + ", ".join(links[:10])]
    lines.append("")
    for m in cmp["metrics"]:
        if m["verdict"] != "pass":
            lines.append(f"- `{m['name']}` ({series_label(m['series'])}): {m['reason']}")
    c = cmp.get("candidate_runs", [{}])[0] if cmp.get("candidate_runs") else {}
    hw = c.get("hardware") or {}
    lines += ["", f"Compared: candidate run(s) {', '.join(map(str, cmp['candidate_run_ids']))}"
                  f" (commit `{c.get('commit') or '?'}`) against baseline `{base}` run(s) "
                  f"{', '.join(map(str, cmp['baseline_run_ids'])) or 'none'}; hardware "
                  f"{hw.get('gpu_count', '?')}x {hw.get('gpu', '?')}; {cmp['correction']}, "
                  f"alpha {cmp['alpha']}."]
    if dashboard_url:
        q = urlencode({"benchmark": b, "baseline": base,
                       "run_ids": ",".join(map(str, cmp["candidate_run_ids"]))})
        lines.append(f"[Open the comparison in the dashboard]({dashboard_url.rstrip('/')}/compare?{q})")
    return "\n".join(lines) + "\n"
