"""Dashboard pages. Data comes from service functions (never HTTP to itself); figures.py draws."""
from __future__ import annotations

import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated
from urllib.parse import urlencode

import plotly
from fastapi import APIRouter, Depends, FastAPI, Path as PathParam, Query, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy import select
from sqlalchemy.orm import Session

from service import tracestore
from service.api.deps import db, require_read
from service.errors import ApiError
from service.gate_report import series_label
from service.models import Baseline, Benchmark, Run, Series, TraceFile
from service.repositories import baselines as baseline_repo
from service.repositories.runs import get_run, run_out, samples_of
from service.schemas import GateIn
from service.stats.compare import compare
from service.stats.gate import run_gate
from service.stats.history import change_points, metric_threshold, series_history

from . import figures

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
router = APIRouter(include_in_schema=False, dependencies=[Depends(require_read)])
Opt = Annotated[str | None, Query(max_length=200)]


def _fig(fig) -> str:
    return fig.to_json()


def _page(request: Request, template: str, **ctx) -> HTMLResponse:
    return templates.TemplateResponse(request, template, {"now": datetime.now(timezone.utc)
                                                      .strftime("%Y-%m-%d %H:%M UTC"), **ctx})


def _series_name(s: dict) -> str:
    cfg = {**s.get("config", {}), "gpu": s.get("gpu"), "gpu_count": s.get("gpu_count")}
    parts = []
    for k in ("tp", "batch_size", "shared_experts"):
        if k in cfg:
            parts.append(f"{'M' if k == 'batch_size' else k}={cfg[k]}" if k != "shared_experts"
                         else str(cfg[k]))
    if "cuda_graphs" in cfg:
        parts.append("graphs" if cfg["cuda_graphs"] else "eager")
    for k in ("concurrency", "request_rate"):
        if k in cfg:
            parts.append(f"{k}={cfg[k]}")
    parts.append(f"{cfg.get('gpu_count') or ''}x{cfg.get('gpu') or '?'}")
    return " ".join(str(p) for p in parts)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, session: Session = Depends(db)):
    rows = []
    for b in session.scalars(select(Benchmark)):
        latest = session.scalars(select(Run).where(Run.benchmark_id == b.id)
                                 .order_by(Run.started_at.desc(), Run.id.desc()).limit(1)).first()
        if latest is None:
            continue
        base = session.scalars(select(Baseline).where(Baseline.benchmark_id == b.id)
                               .order_by(Baseline.updated_at.desc()).limit(1)).first()
        verdict, change, base_name = None, None, None
        if base is not None:
            base_name = base.name
            try:
                g = run_gate(session, GateIn(benchmark=b.name, baseline=base.name,
                                             run_ids=[latest.id]))
                verdict = g["verdict"]
                tok = next((m for m in g["metrics"] if m["name"] == "tok_s"), None)
                change = tok["delta_pct"] if tok else None
            except ApiError:
                verdict = None
        rows.append({"name": b.name, "latest": latest, "runs": session.query(Run)
                     .filter(Run.benchmark_id == b.id).count(), "baseline": base_name,
                     "verdict": verdict, "change": change,
                     "started": latest.started_at.strftime("%Y-%m-%d %H:%M UTC")})
    rows.sort(key=lambda r: r["latest"].started_at, reverse=True)
    return _page(request, "index.html", rows=rows, title="perfwarden")


@router.get("/benchmarks/{name}", response_class=HTMLResponse)
def benchmark_page(request: Request, name: str, session: Session = Depends(db),
                   series: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None, branch: Opt = None,
                   label: Opt = None, gpu: Opt = None, metric: Opt = "tok_s",
                   since: Opt = None, until: Opt = None, baseline: Opt = None):
    metric = metric or "tok_s"
    t0, t1 = _parse_time(since, "since"), _parse_time(until, "until")
    hist = series_history(session, name, metric, series, since=t0, until=t1, branch=branch,
                          label=label)
    if gpu:
        hist = [h for h in hist if h["gpu"] == gpu]
    all_series = series_history(session, name, metric)
    for h in hist + all_series:
        h["name"] = _series_name(h)
    bench = session.scalars(select(Benchmark).where(Benchmark.name == name)).one()
    bases = baseline_repo.list_all(session, name)
    base = next((b for b in bases if b.name == baseline), bases[0] if bases else None)
    bands, changes = {}, {}
    if base is not None:
        base_runs = {r.id: r for r in session.scalars(select(Run).where(Run.id.in_(base.run_ids)))}
        for h in hist:
            means = [r["mean"] for r in h["runs"] if r["id"] in base_runs]
            if len(means) >= 2:
                mu, sd = statistics.fmean(means), statistics.stdev(means)
                bands[h["series_id"]] = (mu - 2 * sd, mu, mu + 2 * sd)
            elif means:
                bands[h["series_id"]] = (means[0], means[0], means[0])
    thr = metric_threshold(metric)
    for h in hist:
        cps = change_points([r["mean"] for r in h["runs"]], thr)
        changes[h["series_id"]] = [{**c, "started_at": h["runs"][c["index"]]["started_at"]}
                                   for c in cps]
    # trial points for the most recent runs of each series (run means are drawn for all)
    shown = [r["id"] for h in hist for r in h["runs"][-300:]]
    samples = {rid: m.get(metric, []) for rid, m in samples_of(session, shown, [metric]).items()}
    unit = next((s.unit for h in hist for r in h["runs"][:1]
                 for s in session.get(Run, r["id"]).stats if s.metric == metric), "")
    main = figures.history(hist, metric, unit, samples, bands, changes,
                           f"{name}: {metric} per run" + (f" (baseline {base.name} band: mean ± 2 sd "
                                                          "of its runs)" if base else ""))
    panels = []
    for m, title, u in (("kv_capacity_tokens", "KV-cache capacity", "tokens"),
                        ("aux_gap_mean_us", "auxiliary-stream idle gap (mean)", "us")):
        if m == metric:
            continue
        ph = series_history(session, name, m, series, since=t0, until=t1, branch=branch,
                            label=label)
        if gpu:
            ph = [h for h in ph if h["gpu"] == gpu]
        for h in ph:
            h["name"] = _series_name(h)
        if ph:
            panels.append(_fig(figures.small_panel(ph, title, u)))
    recent = session.scalars(select(Run).where(Run.benchmark_id == bench.id)
                             .order_by(Run.started_at.desc(), Run.id.desc()).limit(25)).all()
    has_matrix = len({h["config"].get("batch_size") for h in all_series}) > 1
    return _page(request, "benchmark.html", title=f"{name} · perfwarden", name=name,
                 figure=_fig(main), panels=panels, series=all_series, selected=series,
                 metric=metric, branch=branch or "", label=label or "", gpu=gpu or "",
                 since=since or "", until=until or "", baselines=bases, baseline=base,
                 recent=recent, changes=changes, has_matrix=has_matrix,
                 gpus=sorted({h["gpu"] for h in all_series}))


def _parse_time(v: str | None, field: str) -> datetime | None:
    if not v:
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(422, "validation_error", f"{field}: expected an ISO 8601 time", field) from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


@router.get("/benchmarks/{name}/matrix", response_class=HTMLResponse)
def matrix_page(request: Request, name: str, session: Session = Depends(db), label: Opt = None):
    hist = series_history(session, name, "tok_s", label=label)
    cells = []
    for h in hist:
        cfg = h["config"]
        if "batch_size" not in cfg:
            continue
        latest = h["runs"][-1]
        run = session.get(Run, latest["id"])
        det = run.determinism or {}
        variant = " ".join(x for x in (f"tp{cfg.get('tp', '?')}", str(cfg.get("shared_experts", "")),
                                       "graphs" if cfg.get("cuda_graphs") else "eager",
                                       h["gpu"]) if x)
        cv = 100.0 * (latest["stdev"] or 0.0) / latest["mean"] if latest["mean"] else 0.0
        cells.append({"variant": variant, "batch_size": cfg["batch_size"], "mean": latest["mean"],
                      "cv_pct": cv, "run_id": latest["id"],
                      "det": f"{det.get('identical', '?')}/{det.get('repeats', '?')} identical"
                      if det else "no digests"})
    fig = figures.matrix(cells, f"{name}: tok/s of the latest run per cell (± trial CV; "
                                "bitwise-identical repeats)") if cells else None
    return _page(request, "matrix.html", title=f"{name} matrix · perfwarden", name=name,
                 figure=_fig(fig) if fig else None,
                 cells=sorted(cells, key=lambda c: (c["variant"], c["batch_size"])))


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, benchmark: Annotated[str, Query(min_length=1, max_length=200)],
                 baseline: Annotated[str, Query(min_length=1, max_length=200)],
                 run_ids: Annotated[str, Query(min_length=1, max_length=20000)],
                 session: Session = Depends(db)):
    from service.api.routes.gate import parse_run_ids

    cmp = compare(session, GateIn(benchmark=benchmark, baseline=baseline,
                                  run_ids=parse_run_ids(run_ids)),
                  request.app.state.settings.gate_alpha)
    dists = [{"metric": d["metric"], "series": series_label(d["series"]),
              "figure": _fig(figures.distributions(d, d["metric"]))}
             for d in cmp["distributions"] if d["baseline"] and d["metric"] != "kv_capacity_tokens"]
    for m in cmp["metrics"]:
        m["series_text"] = series_label(m["series"])
    return _page(request, "compare.html", title=f"compare {benchmark} · perfwarden", cmp=cmp,
                 dists=dists)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: Annotated[int, PathParam(ge=1, le=2**31 - 1)], session: Session = Depends(db),
             steps: Annotated[int, Query(ge=1, le=20)] = 3):
    run = run_out(session, get_run(session, run_id))
    timelines = []
    for t in run["traces"][:2]:
        try:
            data = tracestore.timeline_of(request.app.state.settings.data_dir, t["sha256"],
                                          t["filename"], steps)
        except ApiError as e:
            timelines.append({"trace": t, "error": e.message})
            continue
        if data["ops"]:
            timelines.append({"trace": t, "figure": _fig(figures.timeline(
                data, (run.get("trace_summary") or {}).get("min_gap_us", 10.0)))})
        else:
            timelines.append({"trace": t, "error": "no decode steps in this trace"})
    trials = run.get("trials") or []
    ser = session.get(Series, run["series_id"])
    return _page(request, "run.html", title=f"run {run_id} · perfwarden", run=run,
                 trials=trials, timelines=timelines, summary=run.get("trace_summary"),
                 series_name=_series_name({"config": ser.config, "gpu": ser.gpu,
                                           "gpu_count": ser.gpu_count}), steps=steps)


def mount(app: FastAPI) -> None:
    app.include_router(router)

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js():
        return FileResponse(PLOTLY_JS, media_type="application/javascript",
                            headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")

    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    templates.env.globals["urlencode"] = urlencode
