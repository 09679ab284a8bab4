"""Dashboard pages. Data comes from service functions (never HTTP to itself); figures.py draws."""
from __future__ import annotations

import functools
import json
import logging
import re
import shlex
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import plotly
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import UndefinedError

from collectors.traces.summary import valid as valid_summary
from service.alerts import lifecycle
from service.api.deps import TOKEN_COOKIE, ReadAccess, SessionDep
from service.curations import marks as curations
from service.errors import Invalid
from service.experiments import blocks as experiments
from service.format import (
    hardware,
    interval,
    level_pct,
    num,
    pct,
    quantity,
    series_label,
    series_short,
    split_series,
    trace_rank,
)
from service.gate import noisecards, verdicts
from service.gate import view as gate_view
from service.gate.schemas import GateIn, GateOut, MetricVerdict
from service.jobs import tasks
from service.runs.schemas import RUN_EXTRAS
from service.sandbox import Sandbox
from service.schemas import parse_run_ids, parse_thresholds, parse_vary
from service.usecases import overview, pages, runs, summaries

from . import auth, figures, home
from .values import flat, number, ordering, ordering_of, value

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
router = APIRouter(include_in_schema=False, dependencies=[ReadAccess])
Opt = Annotated[str | None, Query(max_length=200)]
log = logging.getLogger("perfwarden.dashboards")


def _fig(fig) -> str:
    return fig.to_json()


def _page(request: Request, template: str, **ctx) -> HTMLResponse:
    return templates.TemplateResponse(request, template, {"now": datetime.now(timezone.utc)
                                                      .strftime("%Y-%m-%d %H:%M UTC"), **ctx})


def _recompute(request: Request) -> summaries.Recompute:
    """What a page calls when a stored summary is missing or stale: queue its refresh (one
    waiting job per benchmark and labels); the page goes on with what is stored."""
    queue = request.app.state.queue

    def ask(benchmark: str, labels: list[str]) -> None:
        try:
            tasks.enqueue_summaries(queue, benchmark, labels)
        except Exception:  # noqa: BLE001 - the page still shows what is stored, said as such
            log.exception("queueing a summary refresh of %r failed", benchmark)
    return ask


def server_url(request: Request) -> str:
    """This server's address as a command on the page names it (`--server`)."""
    return str(request.base_url).rstrip("/")


def _series_name(s: Mapping[str, Any]) -> str:
    return series_short(s.get("config", {}), s.get("gpu"), s.get("gpu_count"))


HOME_PAGE = 100  # benchmarks a home page shows, newest run first


@router.get("/", response_class=HTMLResponse)
def index(request: Request, session: SessionDep,
          page: Annotated[int, Query(ge=1, le=10**6)] = 1, q: Opt = None):
    """Every benchmark's answer, HOME_PAGE at a time; `q` keeps the names that hold it."""
    match = (q or "").strip() or None
    listing = home.rows(session, _recompute(request), request.app.state.settings.gate_alpha,
                        offset=(page - 1) * HOME_PAGE, limit=HOME_PAGE, match=match)
    first = (page - 1) * HOME_PAGE + 1

    def href(n: int) -> str:
        return "/?" + urlencode({**({"q": match} if match else {}), "page": n})

    return _page(request, "index.html", rows=listing.rows, title="perfwarden", q=match or "",
                 total=listing.total, first=first, last=first + len(listing.rows) - 1,
                 prev=href(page - 1) if page > 1 else None,
                 next=href(page + 1) if first + len(listing.rows) - 1 < listing.total else None)


PANELS = (("kv_capacity_tokens", "KV-cache capacity", "tokens"),
          ("aux_gap_mean_us", "auxiliary-stream idle gap (mean)", "us"))


@router.get("/benchmarks/{name}", response_class=HTMLResponse)
def benchmark_page(request: Request, name: str, session: SessionDep,
                   series: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None, branch: Opt = None,
                   label: Opt = None, gpu: Opt = None, metric: Opt = "tok_s",
                   since: Opt = None, until: Opt = None, baseline: Opt = None, x: Opt = "time"):
    """One small panel per series (own y-scale, change points and open alerts marked), or with
    `series` one series in detail (trials, baseline band, other metrics)."""
    metric = metric or "tok_s"
    by = "commit" if x == "commit" else "time"
    t0, t1 = _parse_time(since, "since"), _parse_time(until, "until")
    v = pages.benchmark_view(session, name, metric, series, branch, label, gpu, t0, t1, baseline,
                             tuple(m for m, _, _ in PANELS), _recompute(request),
                             detail=series is not None)
    for h in v.history + v.all_series + [x for p in v.panels.values() for x in p]:
        h["name"] = _series_name(h)
        h["label"] = series_label({**h["config"], "gpu": h["gpu"], "gpu_count": h["gpu_count"]})
    open_alerts = lifecycle.list_alerts(session, name, "open")["alerts"]
    alert_runs: dict[int, set[int]] = {}
    for a in open_alerts:
        if a["metric"] == metric:
            alert_runs.setdefault(a["series_id"], set()).add(a["run_id"])
    ctx = dict(title=f"{name} · perfwarden", name=name, series=v.all_series, selected=series,
               metric=metric, branch=branch or "", label=label or "", gpu=gpu or "",
               since=since or "", until=until or "", baselines=v.baselines, baseline=v.baseline,
               recent=v.recent, changes_note=v.changes_note, x=by, open_alerts=open_alerts,
               has_matrix=v.matrix, empty_note=v.empty_note,
               default_branch=v.default_branch, gpus=sorted({h["gpu"] for h in v.all_series}),
               story=home.row_of(session, _recompute(request),
                                 request.app.state.settings.gate_alpha, name),
               panel_runs=pages.PANEL_RUNS, detail_runs=pages.DETAIL_RUNS,
               curations=curations.list_for(session, name, False)["data"])
    if series is None:
        return _page(request, "benchmark.html", figure=None, panels=[],
                     **_grid(v, alert_runs, by), **ctx)
    base = v.baseline
    main = figures.history(v.history, metric, v.unit, v.samples, v.bands, v.changes,
                           f"{metric} per run" + (f" (baseline {base.name} band: mean ± 2 sd "
                                                  "of its runs)" if base else ""))
    panels = [_fig(figures.small_panel(v.panels[m], title, u)) for m, title, u in PANELS
              if v.panels.get(m)]
    noise = noisecards.cards(session, name, [(series, metric)],
                             request.app.state.settings.gate_alpha)
    return _page(request, "benchmark.html", figure=_fig(main), panels=panels, grid=None,
                 common="", noise=noise, **ctx)


def _grid(v: pages.BenchmarkView, alert_runs: dict[int, set[int]], by: str) -> dict:
    """The per-series panels, those with alerts or change points first, and the config keys
    every panel shares (said once above them)."""
    order = sorted(v.history, key=lambda h: (not alert_runs.get(h["series_id"]),
                                             not v.changes.get(h["series_id"]),
                                             _natural(h["label"])))
    common, diffs = split_series([{**h["config"], "gpu": h["gpu"], "gpu_count": h["gpu_count"]}
                                  for h in order])
    grid = [{"series_id": h["series_id"], "label": h["label"], "runs": len(h["runs"]),
             "short": series_label(d) if d else h["label"],
             "changes": v.changes.get(h["series_id"], []),
             "alerted": bool(alert_runs.get(h["series_id"])),
             "figure": json.dumps(figures.series_panel(
                 h, v.unit, v.bands.get(h["series_id"]), v.changes.get(h["series_id"], []),
                 alert_runs.get(h["series_id"], set()), by))} for h, d in zip(order, diffs)]
    return {"grid": grid, "common": series_label(common) if common and len(order) > 1 else ""}


@router.get("/alerts", response_class=HTMLResponse)
def alerts_page(request: Request, session: SessionDep, benchmark: Opt = None,
                state: Opt = None):
    res = lifecycle.list_alerts(session, benchmark or None, state or None, request.app.state.settings)
    names = [b.name for b in overview.benchmarks(session)]
    return _page(request, "alerts.html", title="alerts · perfwarden", alerts=res["alerts"],
                 benchmarks=names, benchmark=benchmark or "", state=state or "",
                 states=lifecycle.STATES)


def _natural(text: str) -> list:
    """Sort key reading digit runs as numbers (M=2 before M=10)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _parse_time(v: str | None, field: str) -> datetime | None:
    if not v:
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise Invalid(f"{field}: expected an ISO 8601 time", field) from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


@router.get("/benchmarks/{name}/matrix", response_class=HTMLResponse)
def matrix_page(request: Request, name: str, session: SessionDep, label: Opt = None,
                baseline: Opt = None):
    cells, base = pages.matrix_cells(session, name, label, baseline)
    what = (f"label {label}: newest run per cell" if label else
            "newest default-branch run per cell") + (
        f", colored by change vs the mean of baseline {base}'s runs" if base else "")
    fig = figures.matrix(cells, f"tok/s per cell ({what}; ± trial CV; bitwise-identical "
                                "repeats)") if cells else None
    found = summaries.matrix_findings(session, name, label, _recompute(request))
    explained = summaries.stored_explain(session, name, label)
    command = shlex.join(["perfwarden", "explain", name] + (["--label", label] if label else [])
                         + (["--gpu", str(explained["gpu"])] if explained and explained.get("gpu")
                            else []) + ["--server", server_url(request)])
    return _page(request, "matrix.html", title=f"{name} matrix · perfwarden", name=name,
                 figure=_fig(fig) if fig else None, findings=found.lines, findings_note=found.note,
                 explained=explained, explain_command=command,
                 server_arg=shlex.quote(server_url(request)),
                 label=label or "", baseline=base,
                 cells=sorted(cells, key=lambda c: (c["variant"], c["batch_size"])),
                 traced=set(runs.trace_states(session, [c["run_id"] for c in cells])))


@router.get("/compare", response_class=HTMLResponse)
def compare_page(*, request: Request, benchmark: Annotated[str, Query(min_length=1, max_length=200)],
                 baseline: Annotated[str, Query(min_length=1, max_length=200)],
                 run_ids: Annotated[str, Query(min_length=1, max_length=20000)],
                 vary: Annotated[str | None, Query(max_length=2000)] = None,
                 metrics: Annotated[str | None, Query(max_length=2000)] = None,
                 thresholds: Annotated[str | None, Query(max_length=2000)] = None,
                 session: SessionDep):
    cmp = verdicts.compare(session, GateIn(benchmark=benchmark, baseline=baseline,
                                           run_ids=parse_run_ids(run_ids), vary=parse_vary(vary),
                                           metrics=parse_vary(metrics),
                                           thresholds=parse_thresholds(thresholds)),
                           request.app.state.settings.gate_alpha)
    shown = [d for d in cmp.distributions if d.baseline and d.metric != "kv_capacity_tokens"]
    _, keys = split_series([d.series for d in shown])  # the shared keys are in the table's header
    dists = [{"metric": d.metric, "series": series_label(k) if k else "",
              "figure": _fig(figures.distributions(d.model_dump(), d.metric))}
             for d, k in zip(shown, keys)]
    common, rows = _verdict_rows(cmp)
    orderings = {rid: ordering_of(*st) for rid, st in runs.trace_states(
        session, cmp.baseline_run_ids + cmp.candidate_run_ids).items()}
    return _page(request, "compare.html", title=f"compare {benchmark} · perfwarden", cmp=cmp,
                 dists=dists, rows=rows, common=common, level=gate_view.view(cmp).level,
                 unknown=gate_view.view(cmp).unknown,
                 show_series=any(label for _, label, _ in rows), orderings=orderings)


def _verdict_rows(cmp: GateOut) -> tuple[str, list[tuple[MetricVerdict, str, str | None]]]:
    """The gate answer's view (service/gate/view.py, which the CLI and the PR comment render
    too), spelled for the tables: the config keys every row shares (said once, in the header
    row) and per metric verdict the keys that differ and, under the last verdict of each series,
    that series' profiler evidence (None on the others)."""
    gv = gate_view.view(cmp)
    return gv.common_label, [
        (r.metric, r.differs, None if r.evidence is None else
         r.evidence.text(code="") or _no_evidence(cmp, r.metric.series))
        for r in gv.rows]


def _no_evidence(cmp: GateOut, series: Mapping[str, Any]) -> str:
    """Why a series shows no profiler evidence, from the traces its compared runs hold: none,
    one side's only (evidence compares a baseline trace with a candidate's), or traces whose
    figures leave nothing to compare (no auxiliary-stream lane, as on a CPU)."""
    keys = {k: v for k, v in series.items() if k not in ("gpu", "gpu_count", *(cmp.vary or []))}
    traces = getattr(cmp, "traces", None) or {}
    traced = {side: [r.id for r in getattr(cmp, f"{side}_runs", []) if traces.get(r.id)
                     and all(r.config.get(k) == v for k, v in keys.items())]
              for side in ("baseline", "candidate")}
    if not traced["baseline"] and not traced["candidate"]:
        return "no profiler evidence for this series (no traces attached, no aux-gap metric)"
    for side, other in (("baseline", "candidate"), ("candidate", "baseline")):
        if not traced[other]:
            runs = ", ".join(map(str, traced[side]))
            return (f"no profiler evidence for this series: only the {side}'s run {runs} has a "
                    f"trace, and evidence compares a baseline trace with a candidate's")
    return ("no profiler evidence for this series: its traces show no auxiliary-stream gaps, "
            "step GPU time or kernel changes to compare")


@router.get("/experiments/{exp_id}", response_class=HTMLResponse)
def experiment_page(request: Request, exp_id: Annotated[str, PathParam(min_length=1, max_length=200)],
                    session: SessionDep):
    exp = experiments.show(session, exp_id, request.app.state.settings.gate_alpha)
    fig = figures.experiment(exp["blocks"], f"{exp_id}: both arms over block order")
    order = " ".join("".join("A" if a == "baseline" else "B" for a in b["order"])
                     for b in exp["blocks"])
    verdict = exp["verdict"]
    common, rows = _verdict_rows(verdict)
    looks = verdict.looks
    level = (f"{level_pct(verdict.alpha / looks)} (alpha {verdict.alpha:g}/{looks} looks)"
             if looks > 1 else level_pct(verdict.alpha))
    return _page(request, "experiment.html", title=f"experiment {exp_id} · perfwarden", exp=exp,
                 figure=_fig(fig), rows=rows, common=common, order=order, level=level,
                 show_series=any(label for _, label, _ in rows))


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: Annotated[int, PathParam(ge=1, le=2**31 - 1)],
             session: SessionDep, steps: Annotated[int, Query(ge=1, le=20)] = 3):
    s = request.app.state.settings
    v = runs.run_view(session, s.data_dir, run_id, steps, Sandbox.of(s))
    run = v["run"]
    sets = [{**ts, "ordering": ordering(ts)} for ts in v["trace_sets"]]
    summary, notes = (sets[0]["summary"], sets[0]["notes"]) if sets else \
        valid_summary(run.get("trace_summary"))
    min_gap = number((summary or {}).get("min_gap_us")) or 10.0
    timelines = [{"trace": t["trace"], "set": t["set"], "error": t["error"]} if "error" in t else
                 {"trace": t["trace"], "set": t["set"],
                  "figure": _fig(figures.timeline(t["data"], min_gap))}
                 for t in v["timelines"]]
    workload = [(k, num(v, 3, "—") if isinstance(v, (int, float)) and not isinstance(v, bool)
                  else value(v)) for k, v in flat({k: run[k] for k in RUN_EXTRAS
                                                     if k != "trials" and run.get(k)})]
    page = functools.partial(
        _page, request, "run.html", title=f"run {run_id} · perfwarden", run=run,
        trials=run.get("trials") or [], timelines=timelines, workload=workload,
        config=[(k, value(v)) for k, v in run.get("config", {}).items()],
        series_name=v["series_name"], steps=steps)
    no_ordering = [{**ts, "ordering": None} for ts in sets]
    bare = [{**ts, "summary": None} for ts in no_ordering]
    tries = [(summary, sets, notes),  # what renders of a stored summary, the most first
             (summary, no_ordering, [*notes, "ordering: malformed values, not shown"]),
             (None, bare, ["the stored trace summary: malformed values, not shown"])]
    for k, (shown, shown_sets, said) in enumerate(tries):
        try:
            return page(summary=shown, sets=shown_sets, summary_notes=said)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError, UndefinedError) as e:
            if k == len(tries) - 1:
                raise
            log.warning("run %s: its stored trace summary does not render: %r", run_id, e)
    raise AssertionError("unreachable")


PAGES = re.compile(r"^/(|alerts|compare|benchmarks/.*|experiments/.*|runs/.*)$")


def is_page(path: str) -> bool:
    """A dashboard page (whose errors are pages), as against the API, docs and static files."""
    return bool(PAGES.match(path))


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    """An error on a dashboard route: the message the API would give, as a page."""
    return templates.TemplateResponse(request, "error.html", {
        "now": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "status": status,
        "message": message, "title": f"{status} · perfwarden"}, status_code=status)


def warm() -> None:
    """What a page's first view in a fresh process would otherwise pay for: the templates'
    compilation and plotly's first figures (run once at start-up, by the app's lifespan)."""
    for name in sorted(p.name for p in (HERE / "templates").glob("*.html")):
        templates.get_template(name)
    figures.warm()


def mount(app: FastAPI) -> None:
    app.include_router(router)
    app.include_router(auth.add_routes(templates))

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js():
        return FileResponse(PLOTLY_JS, media_type="application/javascript",
                            headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")

    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    templates.env.globals["urlencode"] = urlencode
    templates.env.globals["login_href"] = auth.login_href
    templates.env.globals["signed_in"] = lambda request: TOKEN_COOKIE in request.cookies
    templates.env.globals["trace_rank"] = trace_rank
    templates.env.globals["interval"] = interval
    templates.env.globals["hardware"] = hardware
    templates.env.filters["num"] = lambda v, digits=2: num(number(v), digits, "—")
    templates.env.filters["qty"] = lambda v, unit=None, digits=None: quantity(
        number(v), unit, digits, "—")
    templates.env.filters["pct"] = lambda v: pct(v, "—")
