"""serve, worker and migrate."""

from __future__ import annotations

import asyncio
import math
import signal
from typing import Annotated

import structlog
import typer

from dialscore.cli.output import emit, fail, prepare_database
from dialscore.config import get_settings
from dialscore.kit.collector import tune_garbage_collector
from dialscore.kit.logging import configure_logging


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)
    app.command()(migrate)


def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind (DIALSCORE_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (DIALSCORE_PORT)")] = None,
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="Serve the API only; run 'dialscore worker' apart")
    ] = False,
) -> None:
    """Run the API (and, unless --no-worker, the worker and outbox relay in-process)."""
    import uvicorn

    from dialscore.app import create_app

    settings = get_settings()
    configure_logging(settings.log_format, settings.log_level)
    prepare_database(settings)
    app = create_app(settings, run_worker=not no_worker)
    tune_garbage_collector()
    # uvicorn stops gracefully on SIGTERM (requests in flight, then the lifespan, which stops
    # the worker), then raises the signal again under the handler it found: this one, so
    # that a graceful stop exits 0 instead of dying by the signal.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    uvicorn.run(
        app,
        host=host or settings.host,
        port=port or settings.port,
        log_level=settings.log_level.lower(),
        proxy_headers=True,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds),
    )


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def worker() -> None:
    """Run worker threads, the outbox relay and the webhook dispatcher (with
    DIALSCORE_REDIS_URL on many machines). SIGTERM or SIGINT stops it gracefully."""
    from dialscore.kit.db import Database
    from dialscore.kit.wakers import Wakers
    from dialscore.worker.runtime import BackgroundWorker

    # Stopped before it runs anything, it has nothing to hand back: exit 0 at once.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    settings = get_settings()
    configure_logging(settings.log_format, settings.log_level)
    prepare_database(settings)
    tune_garbage_collector()
    log = structlog.get_logger(__name__)

    async def run() -> None:
        db = Database(settings.resolved_database_url)
        background = BackgroundWorker(settings, db, Wakers())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await background.start()
        log.info("worker running", threads=settings.worker_threads)
        try:
            await stop.wait()
            log.info("worker stopping", grace_seconds=settings.shutdown_grace_seconds)
        finally:
            await background.stop()
            await db.dispose()

    asyncio.run(run())


def migrate() -> None:
    """Bring the database schema up to date."""
    from dialscore.migrations import upgrade

    settings = get_settings()
    try:
        upgrade(settings.resolved_database_url)
    except Exception as exc:
        fail(f"migration failed: {exc}")
    emit({"migrated": True})
