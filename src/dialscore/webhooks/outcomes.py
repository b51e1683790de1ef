"""What an attempt of a delivery came to, and the writer that records attempts in groups: one
transaction for all the outcomes that came while the previous one was written, instead of one
each, so that recording keeps up with sending (and, on SQLite, takes the one writer's turn
once per group)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog

from dialscore.kit import metrics
from dialscore.kit.db import Database
from dialscore.kit.polling import PollingLoop
from dialscore.webhooks import claims, health

log = structlog.get_logger(__name__)

# The most outcomes one transaction records.
MOST_PER_WRITE = 500


@dataclass(frozen=True)
class Outcome:
    """One attempt of one delivery and the delivery's state after it (``record``), with what
    the metrics need of it."""

    record: claims.AttemptRecord
    event_type: str
    # When the event was made, for the delivery latency metric.
    created_at: datetime | None

    @property
    def delivery_id(self) -> str:
        return self.record.delivery_id


class OutcomeWriter:
    """Records outcomes as they come, in groups. ``recorded`` is called with each group once
    its transaction has committed (the deliveries no longer need their leases). An outcome
    whose write fails stays, and is written with the next group: its delivery keeps its
    lease (renewed by the dispatcher) until then, so nobody sends it again meanwhile.

    In the same transaction, each group tells its subscriptions' endpoint health: one whose
    every attempt failed for ``disable_after`` is turned off (P160)."""

    def __init__(
        self,
        db: Database,
        *,
        recorded: Callable[[list[Outcome]], Any],
        retry_seconds: float = 1.0,
        disable_after: timedelta = health.DEFAULT_DISABLE_AFTER,
    ) -> None:
        self.db = db
        self.recorded = recorded
        self.disable_after = disable_after
        self._pending: list[Outcome] = []
        self.loop = PollingLoop(
            self.write_pending, poll_seconds=retry_seconds, name="webhook attempt writer"
        )

    def start(self) -> None:
        self.loop.start()

    async def stop(self) -> None:
        """Stops the loop, then writes what is left (a failure is logged: those deliveries
        are sent again once their leases run out)."""
        await self.loop.stop()
        try:
            await self.write_pending()
        except Exception:
            log.exception("could not record webhook attempts", count=len(self._pending))

    def add(self, outcome: Outcome) -> None:
        self._pending.append(outcome)
        self.loop.wake()

    async def write_pending(self) -> None:
        while self._pending:
            group = self._pending[:MOST_PER_WRITE]
            records = [outcome.record for outcome in group]
            async with self.db.unit_of_work() as session:
                await claims.record_attempts(session, records)
                await health.note_attempts(session, records, disable_after=self.disable_after)
            del self._pending[: len(group)]
            for outcome in group:
                record = outcome.record
                metrics.observe_webhook_attempt(
                    outcome.event_type,
                    record.state,
                    record.status_code,
                    seconds=record.duration_ms / 1000,
                    created_at=outcome.created_at,
                    now=record.completed_at or record.attempted_at,
                )
            self.recorded(group)
