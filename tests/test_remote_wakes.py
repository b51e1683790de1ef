"""Wakes between processes: an API process without a worker tells the worker processes of
new work through Redis, and they wake their own loops at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator

from dialscore.kit.remote_wakes import WakeListener, WakePublisher
from dialscore.kit.wakers import Wakers

REDIS_URL = os.environ.get("DIALSCORE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def test_a_loop_not_run_here_is_woken_remotely_and_one_run_here_locally() -> None:
    asked: list[str] = []
    woken: list[str] = []
    wakers = Wakers(remote=asked.append)
    wakers.register("relay", lambda: woken.append("relay"))
    wakers.wake("relay")
    wakers.wake("dispatcher")
    assert (woken, asked) == (["relay"], ["dispatcher"])


@contextlib.asynccontextmanager
async def worker(namespace: str) -> AsyncIterator[asyncio.Event]:
    """A worker process's wakes: an event set when its relay is woken."""
    woken = asyncio.Event()
    wakers = Wakers()
    loop = asyncio.get_running_loop()
    wakers.register("relay", lambda: loop.call_soon_threadsafe(woken.set))
    listener = WakeListener(REDIS_URL, namespace, wakers)
    listener.start()
    try:
        yield woken
    finally:
        await listener.stop()


@contextlib.asynccontextmanager
async def api(namespace: str) -> AsyncIterator[Wakers]:
    """An API process's wakes, with no loop of its own."""
    publisher = WakePublisher(REDIS_URL, namespace)
    publisher.start()
    try:
        yield Wakers(remote=publisher.publish)
    finally:
        await publisher.stop()


async def woken_by(wakers: Wakers, woken: asyncio.Event) -> None:
    """Wakes the relay until ``woken`` is set (the listener subscribes on a task of its own,
    so the first wakes may come before it listens); bounded."""
    async with asyncio.timeout(10):
        while not woken.is_set():
            wakers.wake("relay")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.05):
                    await woken.wait()


async def test_a_published_wake_reaches_only_the_workers_of_its_namespace() -> None:
    ours, theirs = (f"test-{uuid.uuid4().hex[:8]}" for _ in range(2))
    async with worker(ours) as our_relay, worker(theirs) as their_relay:
        async with api(theirs) as their_api:
            await woken_by(their_api, their_relay)  # their worker listens
        their_relay.clear()
        async with api(ours) as our_api:
            await woken_by(our_api, our_relay)
        assert our_relay.is_set() and not their_relay.is_set()
