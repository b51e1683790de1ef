"""Failed outbox work: retrying a failed task soon, setting aside a message whose attempts ran
out, and listing and requeueing what was set aside."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.models import OutboxMessage

log = structlog.get_logger(__name__)

# The error of a message whose last run ended without a word from its task.
UNFINISHED = "did not finish: its worker died, or stopped renewing its lease, while it ran"
# Doubling stops here; the longest wait is capped well before.
_MAX_DOUBLINGS = 30


@dataclass(frozen=True)
class FailurePolicy:
    """A failed task's message is due again after ``first_retry``, each later failure after
    twice the wait before, never longer than ``longest_retry``; once ``max_attempts``
    publications have failed, it is set aside."""

    max_attempts: int
    first_retry: timedelta
    longest_retry: timedelta

    def retry_delay(self, attempts: int) -> timedelta:
        """The wait after the ``attempts``-th failed publication."""
        doublings = min(max(attempts, 1) - 1, _MAX_DOUBLINGS)
        return min(self.first_retry * (1 << doublings), self.longest_retry)


@dataclass(frozen=True)
class Failure:
    """What recording a failure did to its message."""

    outbox_id: int
    actor: str
    attempts: int
    set_aside: bool
    retry_at: datetime | None


def set_aside(message: OutboxMessage, *, now: datetime, error: str) -> None:
    """Marks a message as failed for good: the relay leaves it until it is requeued."""
    message.failed_at = now
    message.last_error = error
    message.available_at = now


async def record_failure(
    session: AsyncSession, outbox_id: int, *, error: str, now: datetime, policy: FailurePolicy
) -> Failure | None:
    """Notes that the message's current publication failed with ``error``: it is due again
    after the policy's wait, or set aside when its attempts have run out. None when the
    message is gone (finished after all) or already set aside."""
    message = await session.scalar(
        select(OutboxMessage).where(OutboxMessage.id == outbox_id).with_for_update()
    )
    if message is None or message.failed_at is not None:
        return None
    if message.attempts >= policy.max_attempts:
        set_aside(message, now=now, error=error)
        return Failure(message.id, message.actor, message.attempts, True, None)
    message.last_error = error
    message.available_at = now + policy.retry_delay(message.attempts)
    return Failure(message.id, message.actor, message.attempts, False, message.available_at)


async def count_failed(session: AsyncSession) -> int:
    stmt = (
        select(func.count()).select_from(OutboxMessage).where(OutboxMessage.failed_at.is_not(None))
    )
    return int(await session.scalar(stmt) or 0)


async def list_failed(session: AsyncSession) -> Sequence[OutboxMessage]:
    """Every message set aside, the earliest set aside first."""
    stmt = (
        select(OutboxMessage)
        .where(OutboxMessage.failed_at.is_not(None))
        .order_by(OutboxMessage.failed_at, OutboxMessage.id)
    )
    return (await session.scalars(stmt)).all()


async def requeue(
    session: AsyncSession, *, now: datetime, outbox_ids: Sequence[int] | None = None
) -> list[int]:
    """Makes set-aside messages due now with their attempts reset (every one when
    ``outbox_ids`` is None); the ids requeued. The last error stays for reference."""
    stmt = select(OutboxMessage).where(OutboxMessage.failed_at.is_not(None))
    if outbox_ids is not None:
        stmt = stmt.where(OutboxMessage.id.in_(list(outbox_ids)))
    messages = (await session.scalars(stmt.order_by(OutboxMessage.id).with_for_update())).all()
    for message in messages:
        message.failed_at = None
        message.attempts = 0
        message.available_at = now
    return [message.id for message in messages]


def report_set_aside(
    *, outbox_id: int, actor: str, attempts: int, error: str | None, failed_total: int
) -> None:
    """The one log line of a message set aside, with how many are set aside now."""
    log.error(
        "outbox message set aside after failing too often; "
        "list and requeue with 'dialscore admin failed-work'",
        outbox_id=outbox_id,
        actor=actor,
        attempts=attempts,
        error=error,
        failed_total=failed_total,
    )
