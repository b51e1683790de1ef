"""Wakes carried between processes by Redis. An API process that wrote work for a loop it
does not run (the outbox relay, the webhook dispatcher) publishes the loop's name once its
transaction has committed; every worker process listening wakes its own loop of that name at
once, instead of finding the work at its next poll. A wake lost (Redis away, nobody
listening) costs only that poll."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import redis.asyncio
import structlog

from dialscore.kit.wakers import Wakers

log = structlog.get_logger(__name__)

REDIS_FAILURES = (redis.RedisError, OSError)
# After a failure, how long the listener waits before it subscribes again.
RETRY_SECONDS = 1.0


def channel(namespace: str) -> str:
    return f"{namespace}:wake"


class WakePublisher:
    """Publishes the names of loops to wake; ``publish`` is safe from any thread and never
    waits: names asked for while a publish is under way go out together after it."""

    def __init__(self, url: str, namespace: str) -> None:
        self.url = url
        self.channel = channel(namespace)
        self._pending: set[str] = set()
        self._asked = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: Any = None
        self._failing = False

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._asked = asyncio.Event()
        self._client = redis.asyncio.Redis.from_url(self.url, socket_timeout=1.0)
        self._task = self._loop.create_task(self._run(), name="wake publisher")

    async def stop(self) -> None:
        task, self._task, self._loop = self._task, None, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def publish(self, name: str) -> None:
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop closing meanwhile
            loop.call_soon_threadsafe(self._ask, name)

    def _ask(self, name: str) -> None:
        self._pending.add(name)
        self._asked.set()

    async def _run(self) -> None:
        while True:
            await self._asked.wait()
            self._asked.clear()
            names, self._pending = self._pending, set()
            for name in sorted(names):
                try:
                    await self._client.publish(self.channel, name)
                except REDIS_FAILURES as exc:
                    if not self._failing:
                        log.warning("cannot publish a wake to workers", error=str(exc))
                    self._failing = True
                else:
                    self._failing = False


class WakeListener:
    """Wakes this process's loops by the names published to its channel."""

    def __init__(self, url: str, namespace: str, wakers: Wakers) -> None:
        self.url = url
        self.channel = channel(namespace)
        self.wakers = wakers
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="wake listener")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        failing = False
        while True:
            client = redis.asyncio.Redis.from_url(self.url, health_check_interval=30)
            try:
                async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(self.channel)
                    if failing:
                        log.warning("listening for wakes again")
                        failing = False
                    async for message in pubsub.listen():
                        data = message.get("data")
                        if isinstance(data, bytes):
                            self.wakers.wake(data.decode(errors="replace"))
            except REDIS_FAILURES as exc:
                if not failing:
                    log.warning(
                        "cannot listen for wakes: new work is found at each poll meanwhile",
                        error=str(exc),
                    )
                failing = True
                await asyncio.sleep(RETRY_SECONDS)
            finally:
                await client.aclose()
