"""Runs background work in this process: the Dramatiq broker and worker threads, the outbox
relay, the webhook dispatcher and the housekeeping of expired records."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import dramatiq
import structlog
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import AsyncIO, TimeLimit, default_middleware

from dialscore.config import Settings
from dialscore.enrichment.service import check_source_names
from dialscore.jobs.callability import rules_in_force
from dialscore.jobs.tasks import TASKS
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.foreground import Foreground, any_time
from dialscore.kit.wakers import DISPATCHER, RELAY, Wakers
from dialscore.scoring.providers import check_provider_settings
from dialscore.webhooks.delivery import Dispatcher
from dialscore.webhooks.ratelimit import delivery_rate_limiter
from dialscore.worker.actors import Task, declare_actors, failure_policy
from dialscore.worker.context import ClosesTaskContext, TaskContext
from dialscore.worker.housekeeping import Housekeeping
from dialscore.worker.relay import Relay

log = structlog.get_logger(__name__)

# After the grace time, how long runs that were cancelled get to hand back their work.
_CANCEL_SECONDS = 5.0
# How often stop() looks whether the runs under way have ended.
_STOP_POLL_SECONDS = 0.05


class _ProcessTimeLimit(TimeLimit):
    """Dramatiq's time limit, booted once per process: each booted TimeLimit starts a
    thread that never ends, and a process that builds many brokers (the test suite builds
    one per app) gathered over a thousand of them."""

    def __init__(self) -> None:
        super().__init__()
        self.booted = False
        self.lock = threading.Lock()

    def after_process_boot(self, broker: Any) -> None:
        with self.lock:
            if self.booted:
                return
            self.booted = True
        super().after_process_boot(broker)  # type: ignore[no-untyped-call]


_TIME_LIMIT = _ProcessTimeLimit()


def _middleware() -> list[Any]:
    """Dramatiq's default middleware, with this process's one time limit."""
    return [_TIME_LIMIT if kind is TimeLimit else kind() for kind in default_middleware]


def build_broker(
    settings: Settings,
    tasks: Mapping[str, Task],
    context: TaskContext,
    *,
    clock: Callable[[], datetime] = utcnow,
) -> Any:
    """A broker (Redis when configured, else in memory) with an actor for each task."""
    broker: Any
    if settings.redis_url:
        broker = RedisBroker(  # type: ignore[no-untyped-call]
            url=settings.redis_url, namespace=settings.redis_namespace, middleware=_middleware()
        )
    else:
        broker = StubBroker(middleware=_middleware())
        broker.emit_after("process_boot")
    broker.add_middleware(AsyncIO())
    broker.add_middleware(ClosesTaskContext(context))
    declare_actors(broker, tasks, context, failure_policy(settings), clock=clock)
    return broker


class BackgroundWorker:
    """Dramatiq worker threads, the outbox relay, the webhook dispatcher and housekeeping,
    inside the current process; its loops are registered with ``wakers`` while they run."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        wakers: Wakers,
        *,
        tasks: Mapping[str, Task] = TASKS,
        clock: Callable[[], datetime] = utcnow,
        foreground: Foreground | None = None,
    ) -> None:
        """``tasks`` and ``clock`` (the time failures are recorded at) are for tests;
        ``foreground``, the requests this process serves, which its jobs give way to (P211),
        and the turns its jobs take their steps in (P219)."""
        check_provider_settings(settings)
        check_source_names(settings)
        # A refused calling-time rules file stops the start, never falls back (P170, P177).
        rules_in_force(settings.compliance_rules)
        self.settings = settings
        self.wakers = wakers
        # Made before the worker starts, so no task can run without it.
        self.context = TaskContext(
            settings,
            Database(settings.resolved_database_url),
            wakers,
            step=any_time if foreground is None else foreground.turn,
        )
        self.broker = build_broker(settings, tasks, self.context, clock=clock)
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
            max_attempts=settings.outbox_max_attempts,
        )
        self.limiter = delivery_rate_limiter(settings)
        self.dispatcher = Dispatcher(db, settings, self.limiter)
        self.housekeeping = Housekeeping(db, settings)

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
        self.housekeeping.start()
        self.wakers.register(RELAY, self.relay.wake)
        self.wakers.register(DISPATCHER, self.dispatcher.wake)

    async def stop(self, grace: float | None = None) -> None:
        """Stops claiming work; lets the jobs and deliveries in flight finish for up to
        ``grace`` seconds (``shutdown_grace_seconds``), jobs stopping after their batch; then
        cuts the rest short. Whatever was not finished is handed back, due at once for other
        workers, and counts as no failed attempt."""
        grace = self.settings.shutdown_grace_seconds if grace is None else grace
        deadline = time.monotonic() + grace
        self.wakers.unregister(RELAY)
        self.wakers.unregister(DISPATCHER)
        await self.relay.stop()
        await self.housekeeping.stop()
        self.context.stop()
        # Worker threads take no new message once their current one ends (one taken
        # meanwhile is handed back), and the broker keeps those not taken: the Redis broker
        # gets back those fetched ahead when the worker stops. Only the threads: a paused
        # Dramatiq consumer waits seconds before it looks again.
        for thread in self.worker.workers:
            thread.pause()
        await asyncio.gather(self.dispatcher.stop(grace), self._end_runs(deadline))
        await self.limiter.close()
        await asyncio.to_thread(self.worker.stop, 30_000)
        self.broker.close()

    async def _end_runs(self, deadline: float) -> None:
        """Waits for the runs under way to end until ``deadline``, then cancels the rest and
        waits (bounded) for them to hand their work back."""
        while self.context.runs and time.monotonic() < deadline:
            await asyncio.sleep(_STOP_POLL_SECONDS)
        loop_thread = get_event_loop_thread()
        if not self.context.runs or loop_thread is None:
            return
        log.warning(
            "stopping tasks still running after the grace time", count=len(self.context.runs)
        )
        loop_thread.loop.call_soon_threadsafe(self.context.cancel_runs)
        ends = time.monotonic() + _CANCEL_SECONDS
        while self.context.runs and time.monotonic() < ends:
            await asyncio.sleep(_STOP_POLL_SECONDS)

    def join(self) -> None:
        """Waits until every queue is empty and idle (in-memory broker only; for tests)."""
        for queue in self.broker.get_declared_queues():
            self.broker.join(queue)
        self.worker.join()
