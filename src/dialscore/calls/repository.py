"""Every query of the calls domain; scoring reads the call history in its own repository."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.models import CallOutcome, Contact

# Bound parameters per IN list: well under SQLite's and PostgreSQL's limits, and small enough
# for the planner to treat as an index lookup per value.
IN_CHUNK = 500


def _chunks(values: Sequence[str]) -> list[Sequence[str]]:
    return [values[i : i + IN_CHUNK] for i in range(0, len(values), IN_CHUNK)]


async def insert_outcomes(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(CallOutcome), rows)


async def contacts_of_client(
    session: AsyncSession, client_id: str, contact_ids: Collection[str]
) -> set[str]:
    """The given contact ids that are contacts of this client."""
    found: set[str] = set()
    for chunk in _chunks(sorted(set(contact_ids))):
        rows = await session.scalars(
            select(Contact.id).where(Contact.id.in_(chunk), Contact.client_id == client_id)
        )
        found.update(rows.all())
    return found


async def list_outcomes(
    session: AsyncSession, *, client_id: str, number: str, offset: int, limit: int
) -> tuple[Sequence[CallOutcome], int]:
    """One page of the client's calls to a number, newest first, and how many there are."""
    conditions = (CallOutcome.client_id == client_id, CallOutcome.number == number)
    total = await session.scalar(select(func.count()).select_from(CallOutcome).where(*conditions))
    rows = await session.scalars(
        select(CallOutcome)
        .where(*conditions)
        .order_by(CallOutcome.called_at.desc(), CallOutcome.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return rows.all(), int(total or 0)
