"""The outbox relay: publishes due outbox messages to the broker."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import structlog

from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.outbox import messages

log = structlog.get_logger(__name__)

Publish = Callable[[list[tuple[str, dict[str, Any]]]], None]


class Relay:
    def __init__(
        self,
        db: Database,
        publish: Publish,
        *,
        lease_seconds: float,
        poll_seconds: float,
        batch_size: int = 200,
    ) -> None:
        self.db = db
        self.publish = publish
        self.lease = timedelta(seconds=lease_seconds)
        self.poll_seconds = poll_seconds
        self.batch_size = batch_size
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def wake(self) -> None:
        """Asks the relay to look now rather than at its next poll; safe from any thread."""
        if self._loop is None or self._wake is None:
            return
        self._loop.call_soon_threadsafe(self._wake.set)

    async def publish_due(self) -> int:
        """Publishes one batch of due messages; how many were published."""
        # Look before taking the write lock, which on SQLite would stall writers every poll.
        async with self.db.read() as session:
            if not await messages.any_due(session, now=utcnow()):
                return 0
        async with self.db.unit_of_work() as session:
            claimed = await messages.claim_due(
                session,
                now=utcnow(),
                lease=self.lease,
                limit=self.batch_size,
                skip_locked=not self.db.is_sqlite,
            )
            batch = [(m.actor, {"outbox_id": m.id, **m.payload}) for m in claimed]
            if batch:
                await asyncio.to_thread(self.publish, batch)
        return len(batch)

    async def drain(self) -> int:
        total = 0
        while (count := await self.publish_due()) > 0:
            total += count
        return total

    async def release_leases(self) -> int:
        async with self.db.unit_of_work() as session:
            return await messages.release_leases(session, now=utcnow())

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        while not self._stopping:
            try:
                await self.drain()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("outbox relay failed; retrying")
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
            # cancellation that arrives as the event fires, and stop() would wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_seconds):
                    await self._wake.wait()
            self._wake.clear()

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self.run(), name="outbox-relay")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping = True
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=1.0)
        with contextlib.suppress(asyncio.CancelledError):
            task.result()
