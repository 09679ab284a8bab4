"""create_app(settings): the API and the installed sites (the dashboard: service/site.py).
Nothing connects at import time."""
from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .alerts import routes as alerts
from .api.deps import strict_query
from .api.guard import Guard
from .api.hosts import Hosts
from .api.lanes import Lanes
from .api.routes import benchmarks, health
from .attribution import routes as attribution
from .baselines import routes as baselines
from .config import Settings
from .curations import routes as curations
from .db import make_engine, session_factory
from .errors import (
    BadRequest,
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    NotFound,
    TooLarge,
    Unauthorized,
    Unavailable,
    from_validation,
)
from .experiments import routes as experiments
from .explain import routes as explain
from .gate import routes as gate
from .history import routes as history
from .jobs import worker
from .jobs.queue import open_queue
from .runs import routes as runs
from .runs.schemas import RunBatchIn, RunIn
from .site import GROUP, Site, installed
from .traces import intake
from .traces import routes as traces
from .version import VERSION

log = logging.getLogger("perfwarden")

# the one place where domain errors become HTTP
STATUS: dict[type[DomainError], int] = {
    BadRequest: 400, Unauthorized: 401, Forbidden: 403, NotFound: 404, Conflict: 409,
    TooLarge: 413, Invalid: 422, Unavailable: 503,
}


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def _disk_full(e: OperationalError) -> bool:
    """SQLite's "database or disk is full", PostgreSQL's disk_full (SQLSTATE 53100)."""
    orig = getattr(e, "orig", None)
    return getattr(orig, "sqlstate", None) == "53100" or "disk is full" in str(e)


def status_of(e: DomainError) -> int:
    for kind in type(e).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    return 400


def error_response(status: int, code: str, message: str, field: str | None = None,
                   request: Request | None = None) -> Response:
    """The one JSON error shape: {"error": {"status", "code", "message", "field"}}; on a
    site's page (the dashboard's) the same message as an HTML page."""
    if request is not None:
        for site in request.app.state.sites:
            if site.is_page(request.url.path):
                return site.error_page(request, status, message)
    return JSONResponse({"error": {"status": status, "code": code, "message": message,
                                   "field": field}}, status_code=status)


def _error_handlers(app: FastAPI) -> None:
    """The one place domain, validation, HTTP and database errors become the one error shape."""
    @app.exception_handler(DomainError)
    async def _domain_error(request: Request, e: DomainError):
        return error_response(status_of(e), e.code, e.message, e.field, request)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, e: RequestValidationError):
        err = from_validation(list(e.errors()))
        return error_response(422, err.code, err.message, err.field, request)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(e.status_code, "http_error")
        return error_response(e.status_code, code, str(e.detail), None, request)

    @app.exception_handler(OSError)
    async def _os_error(request: Request, e: OSError):
        if e.errno in DISK_FULL:  # whatever was being written is removed where it fails
            log.error("disk full: %s", e)
            return error_response(507, "insufficient_storage", "the server's disk is full: "
                                  "nothing was stored; try again later", None, request)
        return await _unexpected(request, e)

    @app.exception_handler(OperationalError)
    async def _db_down(request: Request, e: OperationalError):
        if _disk_full(e):
            log.error("database disk full: %s", str(e).splitlines()[0])
            return error_response(507, "insufficient_storage", "the database's disk is full: "
                                  "nothing was stored; try again later", None, request)
        log.error("database error: %s", str(e).splitlines()[0])
        return error_response(503, "database_unavailable", "the database is not answering; "
                              "try again", None, request)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, e: Exception):
        log.exception("unexpected error")
        return error_response(500, "internal_error", "internal error; see the server log", None,
                              request)


def _routers(app: FastAPI) -> None:
    """Each concept's router (its routes.py), and the benchmark list's and health's
    (service/api/routes/)."""

    app.include_router(runs.router)
    app.include_router(traces.router)
    app.include_router(baselines.router)
    app.include_router(gate.router)
    app.include_router(experiments.router)
    app.include_router(attribution.router)
    app.include_router(explain.router)
    app.include_router(history.router)
    app.include_router(benchmarks.router)
    app.include_router(alerts.router)
    app.include_router(curations.router)
    app.include_router(health.router)


def create_app(settings: Settings | None = None, sites: Sequence[Site] | None = None) -> FastAPI:
    """The app: the API, and `sites` (by default every site installed: the dashboard)."""
    settings = settings or Settings()
    from fastapi import Depends


    app = FastAPI(title="perfwarden", version=VERSION, dependencies=[Depends(strict_query)],
                  docs_url=None, redoc_url=None, lifespan=_lifespan,
                  description="Profiler-guided performance regression checks for LLM inference "
                              "engines (spec/api.md).")
    app.state.settings = settings
    app.state.sites = list(installed() if sites is None else sites)
    if sites is None and not app.state.sites:  # a source tree run without `pip install`
        log.warning("no site installed (entry points %s): serving the API alone", GROUP)
    app.state.engine = make_engine(settings.database_url)
    app.state.sessions = session_factory(app.state.engine)
    settings.data_dir.mkdir(parents=True, exist_ok=True)

    app.state.queue = open_queue(settings, app.state.sessions)  # connects on first use
    app.state.upload_pace = intake.Pace(settings.upload_mb_s * 1e6 or None)


    app.add_middleware(Guard, settings=settings)  # in front of every route (api/guard.py)

    app.add_middleware(Lanes, settings=settings)  # the heavy reads' own lane (api/lanes.py)

    app.add_middleware(Hosts, settings=settings)  # first of all: the Host allow-list
    _error_handlers(app)
    _routers(app)
    _offline_docs(app)

    for site in app.state.sites:
        site.mount(app)
    _document_raw_bodies(app)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The in-process job worker (the SQLite default, or PERFWARDEN_JOBS_IN_PROCESS=1) runs
    while the app serves; the queue's connections close with it."""


    await asyncio.to_thread(_warm, app)  # the first page view after a start is not
    stop = None                                 # the slow one
    if app.state.settings.in_process_worker:
        thread, stop = worker.start_thread(app.state.settings, app.state.sessions)
    try:
        yield
    finally:
        if stop is not None:
            stop.set()
            thread.join(30)
        app.state.queue.close()


def _warm(app: FastAPI) -> None:
    for site in app.state.sites:
        site.warm()
    try:
        with app.state.engine.connect():  # the pool's first connection
            pass
    except OperationalError:  # the database is down: /api/v1/health says so
        log.warning("no database connection at start-up")


def _offline_docs(app: FastAPI) -> None:
    """/docs and /redoc from assets the service serves itself (no CDN: they work offline)."""
    from pathlib import Path

    import fastapi_offline
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    assets = Path(fastapi_offline.__file__).parent / "static"
    app.mount("/static/docs", StaticFiles(directory=str(assets)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs():
        return get_swagger_ui_html(openapi_url="/openapi.json", title="perfwarden API",
                                   swagger_js_url="/static/docs/swagger-ui-bundle.js",
                                   swagger_css_url="/static/docs/swagger-ui.css",
                                   swagger_favicon_url="/static/docs/favicon.png")

    @app.get("/redoc", include_in_schema=False)
    def redoc():
        return get_redoc_html(openapi_url="/openapi.json", title="perfwarden API",
                              redoc_js_url="/static/docs/redoc.standalone.js",
                              redoc_favicon_url="/static/docs/favicon.png", with_google_fonts=False)


def _document_raw_bodies(app: FastAPI) -> None:
    """POST /api/v1/runs and /runs/batch read their bodies themselves (size cap while
    streaming), so their schemas are put into the OpenAPI document by hand."""
    from fastapi.openapi.utils import get_openapi


    def openapi():
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description,
                          routes=app.routes)
        comps = doc.setdefault("components", {}).setdefault("schemas", {})
        for model in (RunIn, RunBatchIn):
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            comps.update(schema.pop("$defs", {}))
            comps[model.__name__] = schema
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
