"""The FastAPI application: routes, error handlers, and the lifespan that owns the engine
and, on the embedded default, the in-process worker and outbox relay."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from dialscore import __version__
from dialscore.accounts.endpoints import router as account_router
from dialscore.calls.endpoints import DOCUMENTED_MODELS as CALL_MODELS
from dialscore.calls.endpoints import router as calls_router
from dialscore.config import Settings
from dialscore.enrichment.service import check_source_names
from dialscore.jobs.endpoints import router as jobs_router
from dialscore.kit.db import Database
from dialscore.kit.deps import AppState, StateDep
from dialscore.kit.errors import install_error_handlers
from dialscore.kit.logging import configure_logging
from dialscore.ratelimit.endpoints import router as quota_router
from dialscore.ratelimit.middleware import RateLimitMiddleware
from dialscore.ratelimit.service import RequestLimiter
from dialscore.scoring.providers import check_provider_settings
from dialscore.submissions.endpoints import DOCUMENTED_MODELS as SUBMISSION_MODELS
from dialscore.submissions.endpoints import router as submissions_router
from dialscore.v1.endpoints import DOCUMENTED_MODELS as V1_MODELS
from dialscore.v1.endpoints import router as v1_router
from dialscore.v1.middleware import DeprecationMiddleware
from dialscore.webhooks.endpoints import DOCUMENTED_MODELS as WEBHOOK_MODELS
from dialscore.webhooks.endpoints import router as webhooks_router

V2_PREFIX = "/api/public/v2"
V1_PREFIX = "/api"

RETRY_AFTER_HEADER = {
    "description": "Seconds until the exceeded tier resets, rounded up",
    "schema": {"type": "integer", "minimum": 1},
}
# The nine headers every /api answer carries (spec: Limits, request rate limits).
RATE_LIMIT_HEADERS = {
    f"X-RateLimit-{part}-{tier}": {
        "description": text.format(tier=tier.lower()),
        "schema": {"type": "integer", "minimum": 0},
    }
    for tier in ("Second", "Minute", "Day")
    for part, text in (
        ("Limit", "Requests allowed in the current {tier} window"),
        ("Remaining", "Requests left in the current {tier} window"),
        ("Reset", "When the current {tier} window ends, in Unix seconds"),
    )
}


# What every answer of a deprecated (version 1) operation carries besides.
DEPRECATION_HEADERS = {
    "Deprecation": {
        "description": "Always true: this call is deprecated",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "Link": {
        "description": 'The version 2 call that replaces this one, rel="successor-version"',
        "schema": {"type": "string"},
    },
}


def _health_router() -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/healthz", summary="The process is up")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @router.get("/readyz", summary="The database is reachable")
    async def readyz(state: StateDep) -> JSONResponse:
        try:
            async with state.db.read() as session:
                await session.execute(text("SELECT 1"))
        except Exception as exc:
            return JSONResponse({"error": f"database unreachable: {exc}"}, status_code=503)
        return JSONResponse({"status": "ok"})

    return router


def create_app(settings: Settings, *, run_worker: bool = True) -> FastAPI:
    """The application; ``run_worker`` runs the worker threads and relay in this process."""
    configure_logging(settings.log_format, settings.log_level)
    check_provider_settings(settings)
    check_source_names(settings)
    if settings.webhook_allow_private:
        structlog.get_logger(__name__).warning(
            "DIALSCORE_WEBHOOK_ALLOW_PRIVATE is on: webhook URLs may use http:// and private "
            "addresses. Never use this in production."
        )

    limiter = RequestLimiter(settings) if settings.rate_limit_enabled else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = Database(settings.resolved_database_url)
        state = AppState(settings=settings, db=db)
        app.state.dialscore = state
        background = None
        if run_worker:
            from dialscore.worker.runtime import BackgroundWorker

            background = BackgroundWorker(settings, db)
            state.wakers = background.wakers
            state.extras["worker"] = background
            await background.start()
        try:
            yield
        finally:
            if background is not None:
                await background.stop()
            if limiter is not None:
                await limiter.close()
            await db.dispose()

    app = FastAPI(
        title="dialscore",
        version=__version__,
        summary="Contact scoring and enrichment service",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.include_router(_health_router())
    v2 = APIRouter(prefix=V2_PREFIX)
    v2.include_router(submissions_router)
    v2.include_router(jobs_router)
    v2.include_router(account_router)
    v2.include_router(webhooks_router)
    v2.include_router(calls_router)
    app.include_router(v2)
    app.include_router(quota_router)
    app.include_router(v1_router, prefix=V1_PREFIX)
    if limiter is not None:
        app.add_middleware(RateLimitMiddleware, limiter=limiter)
    # Added last, so outermost: the limiter's own answers (429, 503) get the headers too.
    app.add_middleware(DeprecationMiddleware)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            models: list[type[BaseModel]] = [
                *SUBMISSION_MODELS,
                *WEBHOOK_MODELS,
                *CALL_MODELS,
                *V1_MODELS,
            ]
            for model in models:
                model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(model_schema.pop("$defs", {}))
                components[model.__name__] = model_schema
            schema["components"]["securitySchemes"] = {
                "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            }
            schema["components"]["headers"] = RATE_LIMIT_HEADERS
            header_refs = {
                name: {"$ref": f"#/components/headers/{name}"} for name in RATE_LIMIT_HEADERS
            }
            for path, operations in schema.get("paths", {}).items():
                if path.startswith("/api"):
                    for operation in operations.values():
                        operation["security"] = [{"bearerAuth": []}]
                        for code, response in operation.get("responses", {}).items():
                            response.setdefault("headers", {}).update(header_refs)
                            if operation.get("deprecated"):
                                response["headers"].update(DEPRECATION_HEADERS)
                            if code == "429":
                                response["headers"]["Retry-After"] = RETRY_AFTER_HEADER
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
