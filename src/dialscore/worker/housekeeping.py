"""Forgets what has expired, so that tables do not grow without end: web sessions that can no
longer sign anyone in, used or expired password links, failed sign-ins too old to count,
idempotency answers past their time to live, uploads unchanged for a day, and the bodies of
webhook deliveries finished longer ago than their retention. Runs in every worker process;
deleting what is already gone is harmless, so no two need to agree."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import structlog

from dialscore import idempotency
from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.polling import PollingLoop
from dialscore.signin import repository as signin
from dialscore.signin.schemas import policy
from dialscore.uploads import service as uploads
from dialscore.webhooks import retention

log = structlog.get_logger(__name__)

# Delivery bodies removed per transaction: a backlog (the first run after an upgrade, or a
# retention shortened) is worked through in short transactions that other writers can come
# between, never one long one.
BODY_BATCH = 500


class Housekeeping:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        *,
        clock: Callable[[], datetime] = utcnow,
        body_batch: int = BODY_BATCH,
    ) -> None:
        self.db = db
        self.settings = settings
        self.clock = clock
        self.body_batch = body_batch
        self.loop = PollingLoop(
            self.forget_expired,
            poll_seconds=settings.housekeeping_minutes * 60,
            name="housekeeping",
            # Not at start: a restart need not wait on, or contend with, a large delete.
            wait_first=True,
        )

    def start(self) -> None:
        self.loop.start()

    async def stop(self) -> None:
        await self.loop.stop()

    async def forget_expired(self) -> dict[str, int]:
        """Deletes every expired record now; how many of each kind."""
        now = self.clock()
        rules = policy(self.settings)
        async with self.db.unit_of_work() as session:
            forgotten = await signin.forget_expired(
                session,
                now=now,
                idle=rules.idle,
                # A failure counts for a window, and a lock it caused lasts as long again.
                failures_since=now - rules.window - rules.lock,
            )
            forgotten["idempotency_answers"] = await idempotency.forget_expired(
                session, before=now - self.settings.idempotency_ttl
            )
            forgotten["uploads"] = await uploads.forget_expired(session, now=now)
        forgotten["webhook_bodies"] = await self.forget_delivery_bodies(now)
        if any(forgotten.values()):
            log.info("forgot expired records", **forgotten)
        return forgotten

    async def forget_delivery_bodies(self, now: datetime) -> int:
        """Removes the bodies of the deliveries that finished longer ago than
        ``webhook_retention_days`` (P130), ``body_batch`` per transaction; how many."""
        finished_before = now - self.settings.webhook_retention
        removed = 0
        while True:
            async with self.db.unit_of_work() as session:
                seen, done = await retention.remove_old_bodies(
                    session, finished_before=finished_before, now=now, limit=self.body_batch
                )
            removed += done
            # Fewer than a batch left; or none of a batch could go (each was sent again
            # meanwhile): the next run looks again.
            if seen < self.body_batch or not done:
                return removed
