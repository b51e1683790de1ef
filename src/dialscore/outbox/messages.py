"""Writing, claiming, leasing and finishing outbox messages."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import utcnow
from dialscore.models import OutboxMessage


def enqueue(
    session: AsyncSession,
    actor: str,
    payload: dict[str, Any],
    *,
    available_at: datetime | None = None,
) -> OutboxMessage:
    """Adds a message to the session; it exists once the caller's transaction commits."""
    now = utcnow()
    message = OutboxMessage(
        actor=actor, payload=payload, available_at=available_at or now, attempts=0, created_at=now
    )
    session.add(message)
    return message


async def finish(session: AsyncSession, outbox_id: int) -> None:
    await session.execute(delete(OutboxMessage).where(OutboxMessage.id == outbox_id))


async def extend_lease(session: AsyncSession, outbox_id: int, until: datetime) -> None:
    await session.execute(
        update(OutboxMessage).where(OutboxMessage.id == outbox_id).values(available_at=until)
    )


async def any_due(session: AsyncSession, *, now: datetime) -> bool:
    stmt = select(OutboxMessage.id).where(OutboxMessage.available_at <= now).limit(1)
    return (await session.scalar(stmt)) is not None


async def claim_due(
    session: AsyncSession, *, now: datetime, lease: timedelta, limit: int, skip_locked: bool
) -> Sequence[OutboxMessage]:
    """Due messages, leased to the caller: their next publication moves to ``now + lease``."""
    stmt = (
        select(OutboxMessage)
        .where(OutboxMessage.available_at <= now)
        .order_by(OutboxMessage.available_at, OutboxMessage.id)
        .limit(limit)
    )
    if skip_locked:
        stmt = stmt.with_for_update(skip_locked=True)
    messages = (await session.scalars(stmt)).all()
    for message in messages:
        message.available_at = now + lease
        message.attempts += 1
    return messages


async def release_leases(session: AsyncSession, *, now: datetime) -> int:
    """Makes every published, unfinished message due now (the in-memory broker lost them)."""
    result = await session.execute(
        update(OutboxMessage)
        .where(OutboxMessage.attempts > 0, OutboxMessage.available_at > now)
        .values(available_at=now)
    )
    return int(getattr(result, "rowcount", 0) or 0)
