"""Every query of the score report: the client's calls since a time and the user's scored
contacts, each one statement read in chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.models import CallOutcome, Contact

# Rows fetched at a time: a year of a busy client's calls is never held as rows at once.
CHUNK = 5000


async def calls_since(
    session: AsyncSession, *, client_id: str, since: datetime
) -> AsyncIterator[Sequence[Row[str, str, datetime]]]:
    """The client's calls made at or after ``since`` (number, outcome, time), in chunks."""
    query = (
        select(CallOutcome.number, CallOutcome.outcome, CallOutcome.called_at)
        .where(CallOutcome.client_id == client_id, CallOutcome.called_at >= since)
        .execution_options(yield_per=CHUNK)
    )
    result = await session.stream(query)
    async for chunk in result.partitions():
        yield chunk


async def scored_contacts(
    session: AsyncSession, *, user_id: str, until: datetime
) -> AsyncIterator[Sequence[Row[datetime | None, list[dict[str, Any]]]]]:
    """When each of the user's contacts scored up to ``until`` was scored, and its phone
    entries, in chunks, in time order (a job's contacts in the job's order)."""
    query = (
        select(Contact.scored_at, Contact.phones)
        .where(
            Contact.user_id == user_id,
            Contact.scored_at.is_not(None),
            Contact.scored_at <= until,
        )
        .order_by(Contact.scored_at, Contact.job_id, Contact.ordinal)
        .execution_options(yield_per=CHUNK)
    )
    result = await session.stream(query)
    async for chunk in result.partitions():
        yield chunk
