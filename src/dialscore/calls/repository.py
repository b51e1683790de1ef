"""Every query of the calls domain; scoring reads the call history in its own repository."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.kit.db import upsert
from dialscore.models import CallHourTally, CallOutcome, Contact, ContactNumber

# Bound parameters per IN list: well under SQLite's and PostgreSQL's limits, and small enough
# for the planner to treat as an index lookup per value.
IN_CHUNK = 500


def _chunks(values: Sequence[str]) -> list[Sequence[str]]:
    return [values[i : i + IN_CHUNK] for i in range(0, len(values), IN_CHUNK)]


async def insert_outcomes(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert(CallOutcome), rows)


# A contact's phone entries and fields: what says a called number's line type and zone.
ContactLines = tuple[list[dict[str, Any]], dict[str, Any]]


async def contact_lines(
    session: AsyncSession, client_id: str, contact_ids: Collection[str]
) -> dict[str, ContactLines]:
    """The phone entries and fields of the given contacts that are this client's, by id."""
    found: dict[str, ContactLines] = {}
    for chunk in _chunks(sorted(set(contact_ids))):
        rows = await session.execute(
            select(Contact.id, Contact.phones, Contact.fields).where(
                Contact.id.in_(chunk), Contact.client_id == client_id
            )
        )
        for contact_id, phones, fields in rows:
            found[contact_id] = (phones or [], fields or {})
    return found


async def newest_carriers(
    session: AsyncSession, client_id: str, numbers: Collection[str]
) -> dict[str, ContactLines]:
    """For each number, the phone entries and fields of the client's newest contact that
    carries it; a number no contact carries is missing."""
    found: dict[str, tuple[datetime, ContactLines]] = {}
    for chunk in _chunks(sorted(set(numbers))):
        rows = await session.execute(
            select(ContactNumber.number, Contact.created_at, Contact.phones, Contact.fields)
            .join(Contact, Contact.id == ContactNumber.contact_id)
            .where(ContactNumber.client_id == client_id, ContactNumber.number.in_(chunk))
        )
        for number, created_at, phones, fields in rows:
            known = found.get(number)
            if known is None or created_at > known[0]:
                found[number] = (created_at, (phones or [], fields or {}))
    return {number: lines for number, (_, lines) in found.items()}


async def add_tallies(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Adds calls and connects to the tallies of each row's (client, line type, zone, day,
    hour), making the ones not there yet; rows in key order, so that two reports lock alike."""
    if not rows:
        return
    statement = upsert(session, CallHourTally)
    statement = statement.on_conflict_do_update(
        index_elements=["client_id", "line_type", "time_zone", "day", "hour"],
        set_={
            "calls": CallHourTally.calls + statement.excluded.calls,
            "connects": CallHourTally.connects + statement.excluded.connects,
        },
    )
    await session.execute(statement, list(rows))


async def drop_tallies(session: AsyncSession, client_id: str) -> None:
    await session.execute(delete(CallHourTally).where(CallHourTally.client_id == client_id))


async def outcomes_page(
    session: AsyncSession, client_id: str, *, since: datetime, after_id: int, limit: int
) -> list[tuple[int, str, str | None, str, datetime]]:
    """The client's calls from ``since`` with an id above ``after_id``, by id, at most
    ``limit``: (id, number, contact id, outcome, called at)."""
    rows = await session.execute(
        select(
            CallOutcome.id,
            CallOutcome.number,
            CallOutcome.contact_id,
            CallOutcome.outcome,
            CallOutcome.called_at,
        )
        .where(
            CallOutcome.client_id == client_id,
            CallOutcome.called_at >= since,
            CallOutcome.id > after_id,
        )
        .order_by(CallOutcome.id)
        .limit(limit)
    )
    return [
        (row_id, number, contact_id, outcome, called_at)
        for row_id, number, contact_id, outcome, called_at in rows
    ]


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
