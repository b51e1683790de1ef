"""How long a webhook delivery keeps its body: a finished delivery's body is removed once its
retention has passed, and every delivery of an erased job loses its body, those still pending
cancelled, never to be sent (P130, P132). Their rows and attempts stay: the delivery log."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.webhooks import repository as repo


async def remove_old_bodies(
    session: AsyncSession, *, finished_before: datetime, now: datetime, limit: int
) -> tuple[int, int]:
    """Removes the bodies of at most ``limit`` deliveries that finished (delivered, or their
    retries ran out) at or before ``finished_before``, the earliest first; a pending delivery
    keeps its body however old. (How many were looked at, how many lost their body.)"""
    ids = await repo.bodies_past_retention(session, finished_before=finished_before, limit=limit)
    removed = await repo.remove_bodies(session, ids, finished_before=finished_before, now=now)
    return len(ids), removed


async def erase_job_deliveries(session: AsyncSession, job_id: str, *, now: datetime) -> int:
    """Cancels the job's pending deliveries and removes the bodies of all of them, in the
    caller's transaction; how many were cancelled. A delivery a dispatcher is sending right
    now may still arrive; its attempt is then not recorded (``claims.record_attempts``)."""
    return await repo.erase_job_deliveries(session, job_id, now=now)
