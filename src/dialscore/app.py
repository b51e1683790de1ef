"""The FastAPI application: routes, error handlers, and the lifespan that owns the engine
and, on the embedded default, the in-process worker and outbox relay."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Literal

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel
from sqlalchemy import text

from dialscore import __version__
from dialscore.accounts.endpoints import router as account_router
from dialscore.accuracy.endpoints import router as accuracy_router
from dialscore.accuracy.rnd_endpoints import router as rnd_queries_router
from dialscore.accuracy.sources_endpoints import router as enrichment_report_router
from dialscore.calls.endpoints import router as calls_router
from dialscore.config import Settings
from dialscore.dashboard.endpoints import install as install_dashboard
from dialscore.enrichment.service import check_source_names
from dialscore.jobs.callability import rules_in_force
from dialscore.jobs.endpoints import router as jobs_router
from dialscore.jobs.events import document_events
from dialscore.kit.db import Database
from dialscore.kit.deps import AppState, StateDep
from dialscore.kit.errors import install_error_handlers
from dialscore.kit.foreground import ServingWrites
from dialscore.kit.http import BodySizeLimit
from dialscore.kit.logging import configure_logging
from dialscore.kit.openapi import (
    document_middleware_headers,
    error_responses,
    operation_id,
    restore_examples,
)
from dialscore.kit.routes import include_router
from dialscore.kit.wakers import Wakers
from dialscore.monitoring.endpoints import install as install_metrics
from dialscore.ratelimit.endpoints import router as quota_router
from dialscore.ratelimit.middleware import RateLimitMiddleware
from dialscore.ratelimit.service import RequestLimiter
from dialscore.scoring.providers import check_provider_settings
from dialscore.submissions.endpoints import router as submissions_router
from dialscore.v1.endpoints import router as v1_router
from dialscore.v1.middleware import DeprecationMiddleware
from dialscore.webhooks.endpoints import router as webhooks_router

V2_PREFIX = "/api/public/v2"
V1_PREFIX = "/api"


DESCRIPTION = """\
Rates how reachable a sales contact is by phone, and finds more numbers for a contact.

Submit contacts (`POST /api/public/v2/contacts/score` or `/enrich`); the answer carries a job
id at once. Each contact, once scored, is sent to your webhook subscriptions as a
`job.contact.scored` event, and the job's end as `job.completed` (see *webhooks*); or poll
`GET /api/public/v2/jobs/{jobId}` and read `GET /api/public/v2/jobs/{jobId}/contacts`.

Every call needs `Authorization: Bearer <API key>`. Version 2 answers are `{data: …}`
(submissions add `credits` and `error`); a failure is `{error: "what to fix"}`. Three request
rate tiers apply (per second, minute, day): every answer under `/api` carries the
`X-RateLimit-*` headers, and a used-up tier answers 429 with `Retry-After`.
"""


# Where FastAPIOffline serves the Swagger UI and Redoc files of its package.
REFERENCE_ASSETS = "/static-offline-docs"
# Redoc's sidebar shows Redocly's logo from their CDN, which no option turns off. The bundle
# /redoc loads is the package's with an empty image in its place, which fails to load and so
# is hidden, as Redoc hides a logo it cannot fetch (P96).
REDOC_BUNDLE = "/reference/redoc.standalone.js"
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
# And should a later bundle fetch something else, the browser refuses: the reference pages
# load only what the service serves. Inline scripts and styles, data: images and a blob:
# worker (Redoc's search) are what the two bundles make on their own.
REFERENCE_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; base-uri 'self'; "
    "form-action 'self'"
)


@functools.cache
def _redoc_bundle() -> bytes:
    bundle = resources.files("fastapi_offline").joinpath("static", "redoc.standalone.js")
    return bundle.read_text(encoding="utf-8").replace(REDOC_LOGO, "data:,").encode()


class Health(BaseModel):
    status: Literal["ok"] = "ok"


def _health_router() -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get(
        "/healthz",
        response_model=Health,
        responses=error_responses(500, example={"status": "ok"}),
        summary="The process is up",
    )
    async def healthz() -> Health:
        """Answers as long as the process serves requests; checks nothing else."""
        return Health()

    @router.get(
        "/readyz",
        response_model=Health,
        responses=error_responses(
            500, 503, example={"status": "ok"}, e503="The database cannot be reached"
        ),
        summary="The database is reachable",
    )
    async def readyz(state: StateDep) -> Health | JSONResponse:
        """Answers 200 once the database answers a query, 503 with the reason while it
        does not: what a load balancer should route by."""
        try:
            async with state.db.read() as session:
                await session.execute(text("SELECT 1"))
        except Exception as exc:
            return JSONResponse({"error": f"database unreachable: {exc}"}, status_code=503)
        return Health()

    return router


def _reference_pages(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` (Redoc), from the files FastAPIOffline serves
    (Redoc's without its logo), under ``REFERENCE_POLICY``."""
    # The pages' functions keep what they show, not the app: FastAPI keeps the functions of
    # routes in caches of its own, and an app they kept would outlive its use (a test
    # process makes hundreds).
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect_url = app.swagger_ui_oauth2_redirect_url
    title = app.title
    swagger_ui_parameters = app.swagger_ui_parameters

    def offline(page: HTMLResponse) -> HTMLResponse:
        page.headers["Content-Security-Policy"] = REFERENCE_POLICY
        return page

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return offline(
            get_swagger_ui_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{title} - Swagger UI",
                oauth2_redirect_url=oauth2_redirect_url,
                swagger_js_url=f"{root}{REFERENCE_ASSETS}/swagger-ui-bundle.js",
                swagger_css_url=f"{root}{REFERENCE_ASSETS}/swagger-ui.css",
                swagger_favicon_url=f"{root}{REFERENCE_ASSETS}/favicon.png",
                swagger_ui_parameters=swagger_ui_parameters,
            )
        )

    if oauth2_redirect_url:

        @app.get(oauth2_redirect_url, include_in_schema=False)
        async def swagger_ui_redirect() -> HTMLResponse:
            return offline(get_swagger_ui_oauth2_redirect_html())

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return offline(
            get_redoc_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{title} - ReDoc",
                redoc_js_url=f"{root}{REDOC_BUNDLE}",
                redoc_favicon_url=f"{root}{REFERENCE_ASSETS}/favicon.png",
                with_google_fonts=False,
            )
        )

    @app.api_route(REDOC_BUNDLE, methods=["GET", "HEAD"], include_in_schema=False)
    async def redoc_bundle() -> Response:
        return Response(
            _redoc_bundle(),
            media_type="text/javascript; charset=utf-8",
            headers={"Cache-Control": "public, max-age=3600"},
        )


def create_app(settings: Settings, *, run_worker: bool = True) -> FastAPI:
    """The application; ``run_worker`` runs the worker threads and relay in this process."""
    configure_logging(settings.log_format, settings.log_level)
    check_provider_settings(settings)
    check_source_names(settings)
    # A refused calling-time rules file stops the start, never falls back (P170, P177).
    rules_in_force(settings.compliance_rules)
    if settings.webhook_allow_private:
        structlog.get_logger(__name__).warning(
            "DIALSCORE_WEBHOOK_ALLOW_PRIVATE is on: webhook URLs may use http:// and private "
            "addresses. Never use this in production."
        )

    limiter = RequestLimiter(settings) if settings.rate_limit_enabled else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = Database(settings.resolved_database_url)
        # One per process: the endpoints wake the worker's loops through it; without a worker
        # here, those of the worker processes, through Redis.
        publisher = None
        if not run_worker and settings.redis_url:
            from dialscore.kit.remote_wakes import WakePublisher

            publisher = WakePublisher(settings.redis_url, settings.redis_namespace)
            publisher.start()
        wakers = Wakers(remote=publisher.publish if publisher is not None else None)
        state = AppState(settings=settings, db=db, wakers=wakers)
        if limiter is not None:
            # The web app's account page shows what is left of each tier.
            state.extras["limiter"] = limiter
        app.state.dialscore = state
        background = None
        if run_worker:
            from dialscore.worker.runtime import BackgroundWorker

            background = BackgroundWorker(settings, db, wakers, foreground=state.foreground)
            state.extras["worker"] = background
            await background.start()
        try:
            yield
        finally:
            if background is not None:
                await background.stop()
            if publisher is not None:
                await publisher.stop()
            if limiter is not None:
                await limiter.close()
            await db.dispose()

    # Swagger UI (/docs) and Redoc (/redoc) from assets served by the service itself, so the
    # reference works with no internet. The package serves the files; the pages are ours
    # (_reference_pages), to keep them from loading anything else.
    app = FastAPIOffline(
        docs_url=None,
        redoc_url=None,
        static_url=REFERENCE_ASSETS,
        title="dialscore",
        version=__version__,
        summary="Contact scoring and enrichment service",
        description=DESCRIPTION,
        lifespan=lifespan,
        # Bodies are JSON (D7) whether or not the client says so.
        strict_content_type=False,
        generate_unique_id_function=operation_id,
    )
    _reference_pages(app)
    document_events(app.webhooks)
    install_error_handlers(app)
    include_router(app, _health_router())
    # Each router is included in the app itself, with its prefix: a router included in a
    # router without a prefix has its routes built to check their paths, and again by the
    # app; and only so can kit.routes list them (P222).
    for router in (
        submissions_router,
        jobs_router,
        account_router,
        accuracy_router,
        rnd_queries_router,
        enrichment_report_router,
        webhooks_router,
        calls_router,
    ):
        include_router(app, router, prefix=V2_PREFIX)
    include_router(app, quota_router)
    include_router(app, v1_router, prefix=V1_PREFIX)
    install_dashboard(app)
    # An uploaded contact list may be larger than an API body; its form adds a little more.
    upload_body = settings.upload_max_bytes + 1024 * 1024
    app.add_middleware(
        BodySizeLimit, max_bytes=settings.max_body_bytes, larger={"/app/": upload_body}
    )
    if limiter is not None:
        app.add_middleware(RateLimitMiddleware, limiter=limiter)
    # Added last, so outermost: the limiter's own answers (429, 503) get the headers too.
    app.add_middleware(DeprecationMiddleware)
    # A request that may write holds the in-process worker back from its first byte (P216).
    app.add_middleware(ServingWrites)
    # Outermost of all: every answer is counted, the deprecated paths' and limiter's too.
    install_metrics(app, settings)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
                webhooks=app.webhooks.routes,
            )
            restore_examples(schema, app.routes, "paths")
            restore_examples(schema, app.webhooks.routes, "webhooks")
            app.openapi_schema = document_middleware_headers(schema)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
