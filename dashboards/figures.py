"""Data -> plotly Figure. Pure functions: no database, no HTTP."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]
LAYOUT: dict[str, Any] = dict(template="plotly_white", margin=dict(l=60, r=20, t=40, b=50), height=380,
              legend=dict(orientation="h", y=-0.2), hovermode="closest")


def history(series: Sequence[Mapping[str, Any]], metric: str, unit: str, samples: dict[int, list[float]],
            bands: dict[int, tuple[float, float, float]], changes: dict[int, list[dict]],
            title: str) -> go.Figure:
    """Run means over time per series, each trial as a point, the baseline band, change points.

    Traces are plain dicts wrapped without plotly's per-element validation: a history holds
    thousands of runs and validating them costs more than the page's queries."""
    data: list[dict[str, Any]] = []
    for i, s in enumerate(series):
        color = COLORS[i % len(COLORS)]
        runs = s["runs"]
        # one series: its name heads the chart, so the legend names only what each trace is
        name = s["name"] + " " if len(series) > 1 else ""
        x = [r["started_at"] for r in runs]
        data.append(dict(type="scatter", x=x, y=[r["mean"] for r in runs], mode="lines+markers",
                         name=f"{name}run mean", line=dict(color=color),
                         customdata=[[r["id"], r.get("commit") or "", r.get("label") or ""]
                                     for r in runs],
                         hovertemplate="run %{customdata[0]}<br>%{customdata[2]} "
                                       "%{customdata[1]}<br>mean %{y:.2f}<extra></extra>"))
        tx, ty = [], []
        for r in runs:
            for v in samples.get(r["id"], []):
                tx.append(r["started_at"])
                ty.append(v)
        if tx:
            data.append(dict(type="scatter", x=tx, y=ty, mode="markers", name=f"{name}trials",
                             marker=dict(color=color, size=5, opacity=0.35),
                             hovertemplate="trial %{y:.2f}<extra></extra>"))
        band = bands.get(s["series_id"])
        if band and x:
            lo, mid, hi = band
            # the band: a filled rectangle drawn under the runs, its edges dotted so that a band
            # narrower than a marker still shows; one legend entry with the mean line
            data.insert(0, dict(type="scatter", x=[x[0], x[-1], x[-1], x[0], x[0]],
                                y=[lo, lo, hi, hi, lo], fill="toself", mode="lines",
                                fillcolor=_rgba(color, 0.18), line=dict(color=color, width=1,
                                                                       dash="dot"),
                                name=f"{name}baseline band (mean ± 2 sd)", legendgroup=f"b{i}",
                                hovertemplate=f"baseline band {lo:.4g} to {hi:.4g}<extra></extra>"))
            data.insert(1, dict(type="scatter", x=[x[0], x[-1]], y=[mid, mid], mode="lines",
                                line=dict(color=color, dash="dash", width=1.5),
                                name=f"{name}baseline mean", legendgroup=f"b{i}", showlegend=False,
                                hovertemplate=f"baseline mean {mid:.4g}<extra></extra>"))
        for c in changes.get(s["series_id"], []):
            first_change = not any(d.get("name") == "change point" for d in data)
            data.append(dict(type="scatter", x=[c["started_at"], c["started_at"]],
                             y=[min(c["before_mean"], c["after_mean"]),
                                max(c["before_mean"], c["after_mean"])],
                             mode="lines+markers", line=dict(color="black", dash="dash"),
                             marker=dict(symbol="x", size=10), name="change point",
                             hovertemplate=f"change point {c['delta_pct']:+.2f}%<extra></extra>",
                             showlegend=first_change, legendgroup="change point"))
    layout = dict(**LAYOUT, title=dict(text=title), xaxis=dict(title=dict(text="run start (UTC)")),
                  yaxis=dict(title=dict(text=f"{metric} ({unit})" if unit else metric)))
    return go.Figure(data=data, layout=layout, _validate=False)


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def distributions(dist: dict, metric: str) -> go.Figure:
    """Baseline and candidate samples side by side (one box per side, every sample shown)."""
    fig = go.Figure()
    for side, color in (("baseline", COLORS[0]), ("candidate", COLORS[1])):
        vals = [v for r in dist[side] for v in r["samples"]]
        fig.add_trace(go.Box(y=vals, name=f"{side} ({len(vals)} samples, {len(dist[side])} runs)",
                             boxpoints="all", jitter=0.4, pointpos=0, marker_color=color))
    fig.update_layout(**{**LAYOUT, "height": 340}, title=f"{metric}: sample distributions",
                      yaxis_title=metric, showlegend=False)
    return fig


ROLE_COLOR = {"main": "#1f77b4", "aux": "#ff7f0e", "other": "#7f7f7f"}


def _aux_gaps(ops: list[dict], min_gap_us: float) -> list[tuple[int, float, float]]:
    """(device, start, length) of each idle gap of at least `min_gap_us` on a device's
    auxiliary lane (the union of its aux streams) within one step's ops."""
    by_dev: dict[int, list[tuple[float, float]]] = {}
    for o in ops:
        if o["role"] == "aux":
            by_dev.setdefault(o["device"], []).append((o["start_us"], o["end_us"]))
    out = []
    for dev, ivs in sorted(by_dev.items()):
        ivs.sort()
        end = ivs[0][1]
        for s, e in ivs[1:]:
            if s - end >= min_gap_us:
                out.append((dev, end, s - end))
            end = max(end, e)
    return out


def timeline(data: dict, min_gap_us: float = 10.0) -> go.Figure:
    """Gantt of a few steps, one panel per step framed on that step (its host range and the
    device work launched in it, in us from the step's start), so the idle time between steps
    of a serving engine never shrinks a step to a sliver; one row per stream, idle gaps on the
    auxiliary lane shaded."""
    from plotly.subplots import make_subplots

    steps = data["steps"]
    rows = {(s["device"], s["stream"]): f"GPU{s['device']} s{s['stream']} ({s['role']})"
            for s in data["streams"]}
    by_step: dict[int, list[dict]] = {}
    for o in data["ops"]:
        by_step.setdefault(o["step"], []).append(o)
    titles = [f"step {st['step']} · {st['end_us'] - st['start_us']:,.0f} us" for st in steps]
    fig = make_subplots(rows=max(1, len(steps)), cols=1, subplot_titles=titles or None,
                        vertical_spacing=min(0.12, 0.5 / max(1, len(steps))))
    seen: set[str] = set()
    for r, st in enumerate(steps, start=1):
        ops, t0 = by_step.get(st["step"], []), st["start_us"]
        for role in ("main", "aux", "other"):
            mine = [o for o in ops if o["role"] == role]
            if not mine:
                continue
            fig.add_trace(go.Bar(
                base=[o["start_us"] - t0 for o in mine],
                x=[max(o["end_us"] - o["start_us"], 0.05) for o in mine],
                y=[rows[(o["device"], o["stream"])] for o in mine], orientation="h",
                marker_color=ROLE_COLOR[role], name=f"{role} stream ops", legendgroup=role,
                showlegend=role not in seen,
                customdata=[[o["name"][:90], o["end_us"] - o["start_us"], o["step"]] for o in mine],
                hovertemplate="%{customdata[0]}<br>%{customdata[1]:.1f} us, step %{customdata[2]}"
                              "<extra></extra>"), row=r, col=1)
            seen.add(role)
        gaps = _aux_gaps(ops, min_gap_us)
        if gaps:
            fig.add_trace(go.Bar(base=[g - t0 for _, g, _ in gaps], x=[n for _, _, n in gaps],
                                 y=[f"GPU{d} aux lane gaps" for d, _, _ in gaps], orientation="h",
                                 marker_color="rgba(214,39,40,0.5)", legendgroup="gap",
                                 name=f"aux idle gap (>= {min_gap_us:g} us)",
                                 showlegend="gap" not in seen,
                                 hovertemplate="idle %{x:.1f} us<extra></extra>"), row=r, col=1)
            seen.add("gap")
        lo = min([st["start_us"]] + [o["start_us"] for o in ops]) - t0
        hi = max([st["end_us"]] + [o["end_us"] for o in ops]) - t0
        pad = (hi - lo) * 0.02 or 1.0
        fig.add_vrect(x0=0, x1=st["end_us"] - t0, fillcolor="#eeeeee", opacity=0.3, line_width=0,
                      layer="below", row=r, col=1)
        fig.update_xaxes(range=[lo - pad, hi + pad], row=r, col=1,
                         title_text="us from the step's start" if r == len(steps) else None)
        fig.update_yaxes(autorange="reversed", row=r, col=1)
    lanes = len(rows) + 1
    fig.update_layout(**{**LAYOUT, "height": 140 + len(steps) * (50 + 26 * lanes)},
                      barmode="overlay", title="per-stream timeline (first steps, each framed "
                      "on its own)")
    fig.update_layout(legend=dict(orientation="h", y=-0.6 / max(1, len(steps)), x=0))
    return fig


def matrix(cells: list[dict], title: str = "tok/s by batch size") -> go.Figure:
    """Heatmap: rows are variants, columns batch sizes; the text shows mean, CV and determinism.
    Colored by the change against the baseline where cells have one, else by tok/s."""
    variants = sorted({c["variant"] for c in cells})
    sizes = sorted({c["batch_size"] for c in cells})
    relative = any(c.get("change_pct") is not None for c in cells)
    z, text = [], []
    for v in variants:
        zr, tr = [], []
        for m in sizes:
            c = next((c for c in cells if c["variant"] == v and c["batch_size"] == m), None)
            zr.append((c.get("change_pct") if relative else c["mean"]) if c else None)
            change = f"<br>{c['change_pct']:+.2f}% vs baseline" if c and c.get("change_pct") \
                is not None else ""
            cv = "" if not c or c["cv_pct"] is None else f"±{c['cv_pct']:.1f}%"
            tr.append("" if not c else f"{c['mean']:,.0f}<br>{cv or '±–'}<br>{c['det']}" + change)
        z.append(zr)
        text.append(tr)
    if relative:
        lim = max([abs(x) for row in z for x in row if x is not None] + [1.0])
        heat = go.Heatmap(z=z, x=[f"M={m}" for m in sizes], y=variants, text=text,
                          texttemplate="%{text}", colorscale="RdBu", zmid=0, zmin=-lim, zmax=lim,
                          colorbar=dict(title="% vs baseline"),
                          hovertemplate="%{y} %{x}<br>%{z:+.2f}% vs baseline<extra></extra>")
    else:
        heat = go.Heatmap(z=z, x=[f"M={m}" for m in sizes], y=variants, text=text,
                          texttemplate="%{text}", colorscale="Blues", colorbar=dict(title="tok/s"),
                          hovertemplate="%{y} %{x}<br>%{z:.1f} tok/s<extra></extra>")
    fig = go.Figure(heat)
    fig.update_layout(**{**LAYOUT, "height": 120 + 60 * max(1, len(variants))},
                      title=dict(text=title, x=0, xanchor="left"))
    return fig


def small_panel(series: Sequence[Mapping[str, Any]], title: str, unit: str) -> go.Figure:
    data = [dict(type="scatter", x=[r["started_at"] for r in s["runs"]],
                 y=[r["median"] for r in s["runs"]], mode="lines+markers", name=s["name"],
                 line=dict(color=COLORS[i % len(COLORS)])) for i, s in enumerate(series)]
    layout = dict(**{**LAYOUT, "height": 280}, title=dict(text=title),
                  yaxis=dict(title=dict(text=unit)))
    return go.Figure(data=data, layout=layout, _validate=False)


def experiment(blocks: list[dict], title: str) -> go.Figure:
    """Both arms' run means over block order (one line per arm and series), so drift of the
    machine and the arms' gap are seen together."""
    data: list[dict[str, Any]] = []
    by: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for b in blocks:
        for arm in ("baseline", "candidate"):
            # the second run of a block sits half a step right of the first
            x = b["block"] + 1 + (0.0 if b["order"] and b["order"][0] == arm else 0.5)
            for r in b[arm]:
                if r["tok_s_mean"] is not None:
                    xs, ys = by.setdefault((arm, r["cell"]), ([], []))
                    xs.append(x)
                    ys.append(r["tok_s_mean"])
    for (arm, sid), (xs, ys) in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        data.append(dict(type="scatter", x=xs, y=ys, mode="lines+markers",
                         name=f"{arm} · {sid}",
                         line=dict(color=COLORS[0 if arm == "baseline" else 1],
                                   dash="solid" if arm == "baseline" else "dot"),
                         hovertemplate=f"{arm} block %{{x:.0f}}<br>%{{y:.2f}} tok/s<extra></extra>"))
    layout = dict(**LAYOUT, title=dict(text=title),
                  xaxis=dict(title=dict(text="block (run order within a block: left first)"),
                             dtick=1),
                  yaxis=dict(title=dict(text="tok/s (run mean)")))
    return go.Figure(data=data, layout=layout, _validate=False)


def _ticks(labels: list[str], most: int = 6) -> tuple[list[int], list[str]]:
    """At most `most` evenly spread tick positions over run indexes, with their labels."""
    if not labels:
        return [], []
    step = max(1, -(-len(labels) // most))
    idx = list(range(0, len(labels), step))
    return idx, [labels[i] for i in idx]


def series_panel(s: Mapping[str, Any], unit: str, band: tuple[float, float, float] | None,
                 changes: list[dict], alert_runs: set[int], by: str = "time") -> dict[str, Any]:
    """One series' run means in a chart of its own y-scale: change points as dashed vertical
    lines, runs that opened an alert as red triangles, the baseline band as dotted lines (mean
    ± 2 sd of its run means; the page's legend says so). Runs sit at even steps along x, in
    order, so runs of days apart never squeeze into the panel's edges; the ticks name the run's
    start date, or with `by="commit"` its commit. The y range is the runs' own (the band may
    run past it), so a wide band on noisy data never flattens the runs. The title is the
    page's (HTML above the chart), so nothing draws over it."""
    runs = s["runs"]
    x = list(range(len(runs)))
    if by == "commit":
        names = [f"{(r.get('commit') or 'no commit')[:8]}" for r in runs]
    else:
        names = [str(r["started_at"])[5:16].replace("T", " ") for r in runs]
    xi = {r["id"]: i for i, r in enumerate(runs)}
    y = [r["mean"] for r in runs]
    data: list[dict[str, Any]] = [dict(
        type="scatter", x=x, y=y, mode="lines+markers", line=dict(color=COLORS[0], width=1.5),
        marker=dict(size=4), name="run mean", showlegend=False,
        customdata=[[r["id"], r.get("commit") or "", r.get("label") or "",
                     str(r["started_at"])[:16]] for r in runs],
        hovertemplate="run %{customdata[0]} %{customdata[2]}<br>%{customdata[3]} "
                      "%{customdata[1]}<br>%{y:.4g}<extra></extra>")]
    shapes: list[dict[str, Any]] = []
    if band and x:
        lo, mid, hi = band
        for v, dash in ((lo, "dot"), (mid, "dash"), (hi, "dot")):
            shapes.append(dict(type="line", xref="paper", yref="y", x0=0, x1=1, y0=v, y1=v,
                               line=dict(color=COLORS[0], dash=dash, width=1), opacity=0.6))
    for c in changes:
        cx = xi.get(c.get("run_id"))
        if cx is None:
            continue
        shapes.append(dict(type="line", xref="x", yref="paper", x0=cx, x1=cx, y0=0, y1=1,
                           line=dict(color="#111", dash="dash", width=1.5)))
        data.append(dict(type="scatter", x=[cx], y=[c["after_mean"]], mode="markers",
                         marker=dict(symbol="x", size=9, color="#111"), showlegend=False,
                         name="change point",
                         hovertemplate=f"change point {c['delta_pct']:+.2f}%<extra></extra>"))
    alerted = [r for r in runs if r["id"] in alert_runs]
    if alerted:
        data.append(dict(type="scatter", x=[xi[r["id"]] for r in alerted],
                         y=[r["mean"] for r in alerted], mode="markers", name="open alert",
                         marker=dict(symbol="triangle-down", size=13, color="#b91c1c"),
                         showlegend=False, hovertemplate="open alert at run %{customdata}"
                         "<extra></extra>", customdata=[r["id"] for r in alerted]))
    vals = [v for v in y if v is not None]
    yaxis: dict[str, Any] = dict(tickfont=dict(size=10), title=dict(text=unit, font=dict(size=10)))
    if vals:
        lo_y, hi_y = min(vals), max(vals)
        pad = (hi_y - lo_y) * 0.15 or abs(hi_y) * 0.01 or 1.0
        yaxis["range"] = [lo_y - pad, hi_y + pad]
    tickvals, ticktext = _ticks(names)
    layout = dict(template="plotly_white", height=260, margin=dict(l=56, r=10, t=6, b=34),
                  showlegend=False, hovermode="closest", shapes=shapes,
                  xaxis=dict(tickvals=tickvals, ticktext=ticktext, tickfont=dict(size=10),
                             range=[-0.5, max(len(runs) - 0.5, 0.5)], zeroline=False),
                  yaxis=yaxis)
    return dict(data=data, layout=layout)


def warm() -> None:
    """Build and serialize one figure of each trace type the pages draw, in the page layout:
    plotly loads its template and each type's validators on first use (about half a second),
    which would otherwise fall on the first page view of a fresh process."""
    for trace in (go.Scatter(x=[0, 1], y=[0, 1]), go.Bar(x=[0], y=[1]), go.Box(y=[0, 1]),
                  go.Heatmap(z=[[0, 1]], colorscale="RdBu"), go.Heatmap(z=[[0, 1]], colorscale="Blues")):
        go.Figure(trace, layout=dict(**LAYOUT, title=dict(text="warm-up"))).to_json()
