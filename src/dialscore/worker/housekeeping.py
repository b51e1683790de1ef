"""Forgets what has expired, so that tables do not grow without end: web sessions that can no
longer sign anyone in, used or expired password links, failed sign-ins too old to count,
idempotency answers past their time to live, and uploads unchanged for a day. Runs in every
worker process; deleting what is already gone is harmless, so no two need to agree."""

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

log = structlog.get_logger(__name__)


class Housekeeping:
    def __init__(
        self, db: Database, settings: Settings, *, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.db = db
        self.settings = settings
        self.clock = clock
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
        if any(forgotten.values()):
            log.info("forgot expired records", **forgotten)
        return forgotten
