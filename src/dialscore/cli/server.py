"""serve, worker and migrate."""

from __future__ import annotations

import asyncio
import errno
import math
import signal
import socket
from typing import TYPE_CHECKING, Annotated

import typer

from dialscore.cli.output import emit, fail, prepare_database

if TYPE_CHECKING:
    from dialscore.config import Settings


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
    from dialscore.config import get_settings
    from dialscore.kit.collector import tune_garbage_collector
    from dialscore.kit.logging import configure_logging
    from dialscore.monitoring.endpoints import serve_metrics

    settings = get_settings()
    host, port = host or settings.host, port or settings.port
    # Before the start-up (migrations, the worker), which takes seconds.
    refuse_busy_port(host, port, "--port or DIALSCORE_PORT")
    refuse_unusable_metrics(settings)
    configure_logging(settings.log_format, settings.log_level)
    prepare_database(settings)
    app = create_app(settings, run_worker=not no_worker)
    tune_garbage_collector()
    metrics = serve_metrics(settings)
    # uvicorn stops gracefully on SIGTERM (requests in flight, then the lifespan, which stops
    # the worker), then raises the signal again under the handler it found: this one, so
    # that a graceful stop exits 0 instead of dying by the signal.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level=settings.log_level.lower(),
            proxy_headers=True,
            timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_seconds),
        )
    finally:
        if metrics is not None:
            metrics.close()


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def worker() -> None:
    """Run worker threads, the outbox relay and the webhook dispatcher (with
    DIALSCORE_REDIS_URL on many machines). SIGTERM or SIGINT stops it gracefully."""
    import structlog

    from dialscore.config import get_settings
    from dialscore.kit.collector import tune_garbage_collector
    from dialscore.kit.db import Database
    from dialscore.kit.logging import configure_logging
    from dialscore.kit.metrics import MULTIPROCESS_ENV, multiprocess_dir
    from dialscore.kit.remote_wakes import WakeListener
    from dialscore.kit.wakers import Wakers
    from dialscore.monitoring.endpoints import serve_metrics
    from dialscore.worker.runtime import BackgroundWorker

    # Stopped before it runs anything, it has nothing to hand back: exit 0 at once.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    settings = get_settings()
    refuse_unusable_metrics(settings)
    configure_logging(settings.log_format, settings.log_level)
    prepare_database(settings)
    tune_garbage_collector()
    log = structlog.get_logger(__name__)
    metrics = serve_metrics(settings)
    if metrics is None and multiprocess_dir() is None:
        log.info(
            f"this worker's metrics are not served: set DIALSCORE_METRICS_PORT, or share "
            f"{MULTIPROCESS_ENV} with a process that serves them"
        )

    async def run() -> None:
        db = Database(settings.resolved_database_url)
        wakers = Wakers()
        background = BackgroundWorker(settings, db, wakers)
        # API processes tell of new work through Redis: looked at now, not at the next poll.
        listener = None
        if settings.redis_url:
            listener = WakeListener(settings.redis_url, settings.redis_namespace, wakers)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await background.start()
        if listener is not None:
            listener.start()
        log.info("worker running", threads=settings.worker_threads)
        try:
            await stop.wait()
            log.info("worker stopping", grace_seconds=settings.shutdown_grace_seconds)
        finally:
            if listener is not None:
                await listener.stop()
            await background.stop()
            await db.dispose()

    try:
        asyncio.run(run())
    finally:
        if metrics is not None:
            metrics.close()


def migrate() -> None:
    """Bring the database schema up to date."""
    from dialscore.config import get_settings
    from dialscore.migrations import upgrade

    settings = get_settings()
    try:
        upgrade(settings.resolved_database_url)
    except Exception as exc:
        fail(f"migration failed: {exc}")
    emit({"migrated": True})


def refuse_busy_port(host: str, port: int, setting: str) -> None:
    """Exits with an error naming ``setting`` when ``host:port`` cannot be listened on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As the server itself will: a port whose last connections linger is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                fail(
                    f"port {port} of {host} is already in use, perhaps by another dialscore: "
                    f"stop it, or choose another port with {setting}"
                )
            fail(f"cannot listen on {host} port {port}: {exc.strerror or exc}")


def refuse_unusable_metrics(settings: Settings) -> None:
    """Also refuses a multiprocess directory that cannot be used, the other way the metrics
    can stop a start."""
    from dialscore.kit.metrics import multiprocess_dir_problem

    problem = multiprocess_dir_problem()
    if problem is not None:
        fail(problem)
    if settings.metrics_port is not None:
        host = settings.metrics_host or settings.host
        refuse_busy_port(host, settings.metrics_port, "DIALSCORE_METRICS_PORT")
