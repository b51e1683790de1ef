"""/metrics: on the API's port, or on a port of its own (``DIALSCORE_METRICS_PORT``), never
behind the API key (P86)."""

from __future__ import annotations

import asyncio

import structlog
from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import start_http_server

from dialscore.config import Settings
from dialscore.kit.routes import include_router
from dialscore.monitoring.middleware import RequestMetrics
from dialscore.monitoring.service import Exposition

log = structlog.get_logger(__name__)

METRICS_PATH = "/metrics"


def _router(exposition: Exposition) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get(METRICS_PATH)
    async def metrics(request: Request) -> Response:
        # The database gauges are read with a blocking driver: off the event loop.
        body, content_type = await asyncio.to_thread(
            exposition.render, request.headers.get("accept")
        )
        return Response(body, headers={"Content-Type": content_type})

    return router


def install(app: FastAPI, settings: Settings) -> None:
    """Counts ``app``'s requests and serves /metrics on its port, unless the metrics have a
    port of their own. Add it after every other middleware, so that it is the outermost."""
    if settings.metrics_port is None:
        include_router(app, _router(Exposition(settings)))
    app.add_middleware(RequestMetrics)


class MetricsServer:
    """/metrics on ``DIALSCORE_METRICS_PORT``, served by prometheus-client's server in a
    thread of its own; it answers while the process runs, whatever its event loop does."""

    def __init__(self, settings: Settings) -> None:
        assert settings.metrics_port is not None
        self.host = settings.metrics_host or settings.host
        self.exposition = Exposition(settings)
        self._server, self._thread = start_http_server(
            settings.metrics_port, addr=self.host, registry=self.exposition.registry
        )
        self.port: int = self._server.server_port
        log.info("metrics served", url=f"http://{self.host}:{self.port}{METRICS_PATH}")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_metrics(settings: Settings) -> MetricsServer | None:
    """The separate metrics port's server, started; None when no port is configured."""
    if settings.metrics_port is None:
        return None
    return MetricsServer(settings)
