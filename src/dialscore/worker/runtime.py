"""Runs tasks: the Dramatiq broker and worker, and the database context tasks use."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import dramatiq
import redis.asyncio
import structlog
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import AsyncIO, Middleware

from dialscore.config import Settings
from dialscore.enrichment.providers import EnrichmentProvider
from dialscore.enrichment.service import (
    check_source_names,
    enrichment_providers_from_settings,
    sources_from_settings,
)
from dialscore.enrichment.waterfall import EnrichmentSource
from dialscore.kit.db import Database
from dialscore.kit.wakers import DISPATCHER, RELAY, Wakers
from dialscore.scoring.providers import (
    VerificationProvider,
    check_provider_settings,
    providers_from_settings,
)
from dialscore.webhooks.delivery import Dispatcher
from dialscore.webhooks.ratelimit import DeliveryRateLimiter, MemoryRateLimiter, RedisRateLimiter
from dialscore.worker.registry import Task, load_tasks
from dialscore.worker.relay import Relay

log = structlog.get_logger(__name__)


@dataclass
class TaskContext:
    """What a task may use: settings and a database bound to the worker's event loop."""

    settings: Settings
    db: Database
    # The process's background loops, such as the dispatcher, which a task wakes.
    wakers: Wakers = field(default_factory=Wakers)
    # Verification providers of core scoring, made on first use on the worker's event loop.
    _providers: list[VerificationProvider] | None = None

    @property
    def providers(self) -> list[VerificationProvider]:
        if self._providers is None:
            self._providers = providers_from_settings(self.settings)
        return self._providers

    # The enrichment waterfall, in the operator's order, made on first use likewise.
    _enrichment: list[EnrichmentSource] | None = None
    _enrichment_providers: dict[str, EnrichmentProvider] | None = None

    @property
    def enrichment_sources(self) -> list[EnrichmentSource]:
        if self._enrichment is None:
            self._enrichment_providers = enrichment_providers_from_settings(self.settings)
            self._enrichment = sources_from_settings(
                self.settings, self.db, self._enrichment_providers
            )
        return self._enrichment

    async def close(self) -> None:
        for provider in self._providers or ():
            await provider.close()
        for source in (self._enrichment_providers or {}).values():
            await source.close()
        await self.db.dispose()


_context: TaskContext | None = None


def task_context() -> TaskContext:
    if _context is None:
        raise RuntimeError("no worker is running in this process")
    return _context


class _TaskContextMiddleware(Middleware):
    def __init__(self, settings: Settings, wakers: Wakers) -> None:
        self.settings = settings
        self.wakers = wakers

    def after_worker_boot(self, broker: Any, worker: Any) -> None:
        global _context
        _context = TaskContext(
            self.settings, Database(self.settings.resolved_database_url), self.wakers
        )

    def before_worker_shutdown(self, broker: Any, worker: Any) -> None:
        global _context
        loop_thread = get_event_loop_thread()
        if _context is not None and loop_thread is not None:
            loop_thread.run_coroutine(_context.close())
        _context = None


def _actor_fn(task: Task) -> Any:
    async def run(**kwargs: Any) -> None:
        await task.fn(task_context(), **kwargs)

    run.__name__ = task.name
    run.__qualname__ = task.name
    return run


def build_broker(settings: Settings, wakers: Wakers) -> Any:
    broker: Any
    if settings.redis_url:
        broker = RedisBroker(url=settings.redis_url, namespace=settings.redis_namespace)  # type: ignore[no-untyped-call]
    else:
        broker = StubBroker()
        broker.emit_after("process_boot")
    broker.add_middleware(AsyncIO())
    broker.add_middleware(_TaskContextMiddleware(settings, wakers))
    dramatiq.set_broker(broker)
    for task in load_tasks().values():
        dramatiq.actor(
            actor_name=task.name,
            queue_name=task.queue,
            broker=broker,
            max_retries=3,
            min_backoff=1000,
            time_limit=task.time_limit_ms,
        )(_actor_fn(task))
    return broker


class BackgroundWorker:
    """Dramatiq worker threads, the outbox relay and the webhook dispatcher, inside the
    current process; its loops are registered with ``wakers`` while they run."""

    def __init__(self, settings: Settings, db: Database, wakers: Wakers) -> None:
        check_provider_settings(settings)
        check_source_names(settings)
        self.settings = settings
        self.wakers = wakers
        self.broker = build_broker(settings, wakers)
        self.in_memory = isinstance(self.broker, StubBroker)
        self.worker = dramatiq.Worker(
            self.broker,
            worker_threads=settings.worker_threads,
            worker_timeout=settings.worker_poll_ms,
        )
        self.relay = Relay(
            db,
            self._publish,
            lease_seconds=settings.outbox_lease_seconds,
            poll_seconds=settings.relay_poll_seconds,
        )
        self._redis: Any = None
        limiter: DeliveryRateLimiter
        if settings.redis_url:
            self._redis = redis.asyncio.Redis.from_url(settings.redis_url)
            limiter = RedisRateLimiter(self._redis, settings.redis_namespace)
        else:
            limiter = MemoryRateLimiter()
        self.dispatcher = Dispatcher(db, settings, limiter)

    def _publish(self, batch: list[tuple[str, dict[str, Any]]]) -> None:
        for actor_name, kwargs in batch:
            self.broker.get_actor(actor_name).send_with_options(kwargs=kwargs)

    async def start(self) -> None:
        await asyncio.to_thread(self.worker.start)
        if self.in_memory:
            # Messages published before a restart lived only in the old process's memory.
            released = await self.relay.release_leases()
            if released:
                log.info("republishing unfinished outbox messages", count=released)
        self.relay.start()
        self.dispatcher.start()
        self.wakers.register(RELAY, self.relay.wake)
        self.wakers.register(DISPATCHER, self.dispatcher.wake)

    async def stop(self) -> None:
        self.wakers.unregister(RELAY)
        self.wakers.unregister(DISPATCHER)
        await self.relay.stop()
        await self.dispatcher.stop()
        if self._redis is not None:
            await self._redis.aclose()
        await asyncio.to_thread(self.worker.stop, 30_000)
        self.broker.close()

    def join(self) -> None:
        """Waits until every queue is empty and idle (in-memory broker only; for tests)."""
        for queue in self.broker.get_declared_queues():
            self.broker.join(queue)
        self.worker.join()
