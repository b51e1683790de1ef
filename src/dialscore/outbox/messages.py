"""Writing, claiming, leasing and finishing outbox messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.clock import utcnow
from dialscore.kit.db import changed_rows
from dialscore.models import OutboxMessage
from dialscore.outbox import failed


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


async def discard(session: AsyncSession, actor: str, *, key: str, value: str) -> int:
    """Deletes the messages of ``actor`` whose payload holds ``value`` at ``key``: work no
    longer wanted (its job was erased). A run of one under way finds nothing left to renew or
    finish. How many."""
    result = await session.execute(
        delete(OutboxMessage).where(
            OutboxMessage.actor == actor, OutboxMessage.payload[key].as_string() == value
        )
    )
    return changed_rows(result)


async def start_run(session: AsyncSession, outbox_id: int, until: datetime) -> bool:
    """Counts a run of the message's task as an attempt and leases the message to it until
    ``until``; False when there is nothing to run (finished already, or set aside)."""
    result = await session.execute(
        update(OutboxMessage)
        .where(OutboxMessage.id == outbox_id, OutboxMessage.failed_at.is_(None))
        .values(attempts=OutboxMessage.attempts + 1, available_at=until)
    )
    return bool(getattr(result, "rowcount", 0))


async def extend_lease(session: AsyncSession, outbox_id: int, until: datetime) -> None:
    """Keeps the message from being published again before ``until`` (work in progress)."""
    await session.execute(
        update(OutboxMessage).where(OutboxMessage.id == outbox_id).values(available_at=until)
    )


async def release(session: AsyncSession, outbox_id: int, now: datetime) -> None:
    """Makes a message that this process took but did not start due again at once."""
    await extend_lease(session, outbox_id, now)


async def defer(session: AsyncSession, outbox_id: int, until: datetime) -> None:
    """Leaves the message for later without doing its work (say, another worker holds what
    it is about, or this process is stopping): published again at ``until``, and this run
    is not a failed attempt."""
    await session.execute(
        update(OutboxMessage)
        .where(OutboxMessage.id == outbox_id)
        .values(
            available_at=until,
            attempts=case((OutboxMessage.attempts > 0, OutboxMessage.attempts - 1), else_=0),
        )
    )


async def any_due(session: AsyncSession, *, now: datetime) -> bool:
    stmt = (
        select(OutboxMessage.id)
        .where(OutboxMessage.available_at <= now, OutboxMessage.failed_at.is_(None))
        .limit(1)
    )
    return (await session.scalar(stmt)) is not None


@dataclass
class Claim:
    """What a claim took: messages to publish now, and messages it set aside instead because
    their attempts had run out."""

    published: list[OutboxMessage] = field(default_factory=list)
    set_aside: list[OutboxMessage] = field(default_factory=list)


async def claim_due(
    session: AsyncSession,
    *,
    now: datetime,
    lease: timedelta,
    limit: int,
    skip_locked: bool,
    max_attempts: int,
) -> Claim:
    """Due messages, leased to the caller: their next publication moves to ``now + lease``.

    Publishing is not an attempt: a message lost in the broker, or waiting there longer than
    the lease, is published again at no cost (a run counts when it starts, ``start_run``).
    A due message whose task already ran ``max_attempts`` times is set aside instead: each of
    those runs ended without finishing it (a worker that died, a task that never returned),
    so publishing it again would only go round once more."""
    stmt = (
        select(OutboxMessage)
        .where(OutboxMessage.available_at <= now, OutboxMessage.failed_at.is_(None))
        .order_by(OutboxMessage.available_at, OutboxMessage.id)
        .limit(limit)
    )
    if skip_locked:
        stmt = stmt.with_for_update(skip_locked=True)
    claim = Claim()
    for message in (await session.scalars(stmt)).all():
        if message.attempts >= max_attempts:
            failed.set_aside(message, now=now, error=failed.UNFINISHED)
            claim.set_aside.append(message)
            continue
        message.available_at = now + lease
        claim.published.append(message)
    return claim


async def release_leases(session: AsyncSession, *, now: datetime) -> int:
    """Makes every unfinished message leased or waiting into the future due now: the
    in-memory broker lost what it held, and the process that ran the rest is gone."""
    result = await session.execute(
        update(OutboxMessage)
        .where(OutboxMessage.available_at > now, OutboxMessage.failed_at.is_(None))
        .values(available_at=now)
    )
    return changed_rows(result)
