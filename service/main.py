"""create_app(settings): the API and the dashboard. Nothing connects at import time."""
from __future__ import annotations

import logging
from typing import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .config import Settings
from .db import make_engine, session_factory
from .errors import ApiError, from_validation

log = logging.getLogger("perfwarden")
VERSION = "0.1.0"


def create_app(settings: Settings | None = None,
               on_run_created: Callable[[int], None] | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(title="perfwarden", version=VERSION,
                  description="Profiler-guided performance regression checks for LLM inference "
                              "engines (spec/api.md).")
    app.state.settings = settings
    app.state.engine = make_engine(settings.database_url)
    app.state.sessions = session_factory(app.state.engine)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if on_run_created is None and settings.github_token and settings.bot_baseline:
        from .bot.auto import make_auto_commenter

        on_run_created = make_auto_commenter(app)
    app.state.on_run_created = on_run_created

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, e: ApiError):
        return JSONResponse(e.body(), status_code=e.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, e: RequestValidationError):
        err = from_validation(list(e.errors()))
        return JSONResponse(err.body(), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, e: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(e.status_code, "http_error")
        return JSONResponse(ApiError(e.status_code, code, str(e.detail)).body(),
                            status_code=e.status_code)

    @app.exception_handler(OperationalError)
    async def _db_down(_: Request, e: OperationalError):
        log.error("database error: %s", str(e).splitlines()[0])
        return JSONResponse(ApiError(503, "database_unavailable",
                                     "the database is not answering; try again").body(),
                            status_code=503)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, e: Exception):
        log.exception("unexpected error")
        return JSONResponse(ApiError(500, "internal_error", "internal error; see the server log")
                            .body(), status_code=500)

    from .api.routes import baselines, gate, runs

    app.include_router(runs.router)
    app.include_router(baselines.router)
    app.include_router(gate.router)

    @app.get("/api/v1/health", tags=["meta"])
    def health():
        with app.state.engine.connect() as con:
            con.exec_driver_sql("SELECT 1")
        return {"status": "ok", "version": VERSION}

    from dashboards.routes import mount

    mount(app)
    _document_raw_bodies(app)
    return app


def _document_raw_bodies(app: FastAPI) -> None:
    """POST /api/v1/runs reads its body itself (size cap while streaming), so its schema is put
    into the OpenAPI document by hand."""
    from fastapi.openapi.utils import get_openapi

    from .schemas import RunIn

    def openapi():
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, description=app.description,
                          routes=app.routes)
        schema = RunIn.model_json_schema(ref_template="#/components/schemas/{model}")
        comps = doc.setdefault("components", {}).setdefault("schemas", {})
        comps.update(schema.pop("$defs", {}))
        comps["RunIn"] = schema
        app.openapi_schema = doc
        return doc

    app.openapi = openapi
