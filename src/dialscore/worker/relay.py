"""The outbox relay: publishes due outbox messages to the broker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.polling import PollingLoop
from dialscore.outbox import failed, messages

Publish = Callable[[list[tuple[str, dict[str, Any]]]], None]


class Relay:
    def __init__(
        self,
        db: Database,
        publish: Publish,
        *,
        lease_seconds: float,
        poll_seconds: float,
        max_attempts: int,
        batch_size: int = 200,
    ) -> None:
        self.db = db
        self.publish = publish
        self.lease = timedelta(seconds=lease_seconds)
        self.max_attempts = max_attempts
        self.batch_size = batch_size
        self.loop = PollingLoop(self.drain, poll_seconds=poll_seconds, name="outbox relay")

    def wake(self) -> None:
        """Asks the relay to look now rather than at its next poll; safe from any thread."""
        self.loop.wake()

    def start(self) -> None:
        self.loop.start()

    async def stop(self) -> None:
        await self.loop.stop()

    async def publish_due(self) -> int:
        """Publishes one batch of due messages; how many were published or set aside."""
        # Look before taking the write lock, which on SQLite would stall writers every poll.
        async with self.db.read() as session:
            if not await messages.any_due(session, now=utcnow()):
                return 0
        async with self.db.unit_of_work() as session:
            claim = await messages.claim_due(
                session,
                now=utcnow(),
                lease=self.lease,
                limit=self.batch_size,
                skip_locked=not self.db.is_sqlite,
                max_attempts=self.max_attempts,
            )
            batch = [(m.actor, {"outbox_id": m.id, **m.payload}) for m in claim.published]
            if batch:
                await asyncio.to_thread(self.publish, batch)
            failed_total = await failed.count_failed(session) if claim.set_aside else 0
        for message in claim.set_aside:
            failed.report_set_aside(
                outbox_id=message.id,
                actor=message.actor,
                attempts=message.attempts,
                error=message.last_error,
                failed_total=failed_total,
            )
        return len(batch) + len(claim.set_aside)

    async def drain(self) -> int:
        total = 0
        while (count := await self.publish_due()) > 0:
            total += count
        return total

    async def release_leases(self) -> int:
        async with self.db.unit_of_work() as session:
            return await messages.release_leases(session, now=utcnow())
