"""Every query of the scoring domain: the evidence for a batch of numbers (blocks, do-not-call
lists, company lines, the client's call history, who else carries each number), one query of
each kind per batch whatever its size (the numbers as one parameter, ``kit.db.one_of``), never
one query per phone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import date, datetime
from typing import NamedTuple, TypeVar

from sqlalchemy import Select, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

from dialscore.kit.db import one_of, upsert
from dialscore.models import (
    CallOutcome,
    CompanyLine,
    ContactNumber,
    DncImport,
    DncNumber,
    NumberBlock,
)

K = TypeVar("K")
V = TypeVar("V")


class CallRecordRow(NamedTuple):
    outcome: str
    called_at: datetime
    ivr_path: str | None
    # The contact the call was reported for (its contactId), when one was named.
    contact_id: str | None = None


async def _values_of(
    session: AsyncSession,
    key: QueryableAttribute[K],
    value: QueryableAttribute[V],
    wanted: Collection[K],
) -> dict[K, V]:
    """The ``value`` of each row whose ``key`` is one of ``wanted``, by key (one row a key)."""
    if not wanted:
        return {}
    rows = await session.execute(select(key, value).where(one_of(session, key, wanted)))
    return {found: of for found, of in rows}


async def block_categories(session: AsyncSession, prefixes: Collection[str]) -> dict[str, str]:
    """Category by block prefix (NPA-NXX and NPA-NXX-X) for the given prefixes."""
    return await _values_of(session, NumberBlock.prefix, NumberBlock.category, prefixes)


async def dnc_lists(session: AsyncSession, numbers: Collection[int]) -> dict[int, list[str]]:
    """The do-not-call lists of each listed number (E.164 digits)."""
    found: dict[int, list[str]] = defaultdict(list)
    if not numbers:
        return found
    rows = await session.execute(
        select(DncNumber.number, DncNumber.list_name).where(
            one_of(session, DncNumber.number, numbers)
        )
    )
    for number, name in rows:
        found[number].append(name)
    return found


class ListFreshness(NamedTuple):
    """A do-not-call list's newest import: the date of the file and when it was applied."""

    file_date: date
    applied_at: datetime


async def dnc_list_freshness(session: AsyncSession) -> dict[str, ListFreshness]:
    """Per list name, its newest import (the last applied) and that file's date (P186)."""
    newest = (
        select(DncImport.list_name, func.max(DncImport.id).label("id"))
        .group_by(DncImport.list_name)
        .subquery()
    )
    rows = await session.execute(
        select(DncImport.list_name, DncImport.file_date, DncImport.applied_at).join(
            newest, DncImport.id == newest.c.id
        )
    )
    return {name: ListFreshness(file_date, applied_at) for name, file_date, applied_at in rows}


async def company_lines(session: AsyncSession, numbers: Collection[str]) -> dict[str, str | None]:
    """The numbers that are company main lines, with their dial-tree path if known."""
    return await _values_of(session, CompanyLine.number, CompanyLine.ivr_path, numbers)


async def index_contact_numbers(
    session: AsyncSession, rows: Sequence[dict[str, str | None]]
) -> None:
    """Records which numbers the client's contacts carry; rows already there are kept."""
    if not rows:
        return
    # One statement with many parameter sets: compiled once, not once per distinct batch.
    await session.execute(upsert(session, ContactNumber).on_conflict_do_nothing(), list(rows))


class Carriers(NamedTuple):
    """The client's contacts of one company (or of none) that carry one number."""

    company: str | None
    # How many different people (by person key) and one of their keys.
    people: int
    some_person: str
    # How many contacts and one of their ids.
    contacts: int
    some_contact: str


async def carriers_per_number(
    session: AsyncSession, client_id: str, numbers: Collection[str]
) -> dict[str, list[Carriers]]:
    """Who carries each number in the client's data, company by company (one group for
    contacts of no known company): a number no one carries is missing."""
    found: dict[str, list[Carriers]] = defaultdict(list)
    if not numbers:
        return found
    rows = await session.execute(
        select(
            ContactNumber.number,
            ContactNumber.company_key,
            func.count(func.distinct(ContactNumber.person_key)),
            func.min(ContactNumber.person_key),
            func.count(),
            func.min(ContactNumber.contact_id),
        )
        .where(
            ContactNumber.client_id == client_id,
            one_of(session, ContactNumber.number, numbers),
        )
        .group_by(ContactNumber.number, ContactNumber.company_key)
    )
    for number, company, people, person, contacts, contact in rows:
        found[number].append(Carriers(company, int(people), person, int(contacts), contact))
    return found


async def outcomes_for(
    session: AsyncSession,
    client_id: str,
    numbers: Collection[str],
    since: datetime | None = None,
) -> dict[str, list[CallRecordRow]]:
    """The client's reported calls to each E.164 number (from ``since``, inclusive), oldest
    first. Every distinct number asked for is a key, with an empty list when it has none.

    One query, reading only the columns the engine needs (no ORM objects); the index
    (client_id, number, called_at) answers it."""
    wanted = sorted(set(numbers))
    result: dict[str, list[CallRecordRow]] = {number: [] for number in wanted}
    if not wanted:
        return result
    query = select(
        CallOutcome.number,
        CallOutcome.outcome,
        CallOutcome.called_at,
        CallOutcome.ivr_path,
        CallOutcome.contact_id,
    ).where(CallOutcome.client_id == client_id, one_of(session, CallOutcome.number, wanted))
    if since is not None:
        query = query.where(CallOutcome.called_at >= since)
    query = query.order_by(CallOutcome.number, CallOutcome.called_at, CallOutcome.id)
    for number, outcome, called_at, ivr_path, contact_id in await session.execute(query):
        result[number].append(CallRecordRow(outcome, called_at, ivr_path, contact_id))
    return result


async def recently_called(
    session: AsyncSession, client_id: str, *, since: datetime, limit: int
) -> list[str]:
    """The client's numbers with a call reported from ``since``, the most recently called
    first, at most ``limit`` of them."""
    query = (
        select(CallOutcome.number)
        .where(CallOutcome.client_id == client_id, CallOutcome.called_at >= since)
        .group_by(CallOutcome.number)
        .order_by(func.max(CallOutcome.called_at).desc(), CallOutcome.number)
        .limit(limit)
    )
    return list((await session.scalars(query)).all())


async def person_keys(session: AsyncSession, contact_ids: Collection[str]) -> dict[str, str]:
    """The person key each of these contacts was indexed with (contacts with no number, or
    of no client, are missing)."""
    if not contact_ids:
        return {}
    query = select(ContactNumber.contact_id, ContactNumber.person_key).where(
        one_of(session, ContactNumber.contact_id, set(contact_ids))
    )
    return {contact_id: key for contact_id, key in await session.execute(query)}


async def forget_contacts(session: AsyncSession, contact_ids: Select[str]) -> None:
    """Deletes the numbers these contacts carried (switchboard evidence, and whom a call
    reported for one of them was about). The calls reported for them are left as they are:
    see ``service.forget_contacts``."""
    await session.execute(
        delete(ContactNumber)
        .where(ContactNumber.contact_id.in_(contact_ids))
        .execution_options(synchronize_session=False)
    )
