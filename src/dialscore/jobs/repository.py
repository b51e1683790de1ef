"""Every query of the jobs domain."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.enrichment.waterfall import Tally
from dialscore.jobs.schemas import ContactRow
from dialscore.kit.db import changed_rows, table_of, upsert
from dialscore.models import Contact, ContactIntake, EnrichmentTally, Job, RejectedRow

ACTIVE_STATES = ("Init", "Processing")


async def get_job_of_user(session: AsyncSession, job_id: str, user_id: str) -> Job | None:
    return (
        await session.scalars(select(Job).where(Job.id == job_id, Job.user_id == user_id))
    ).first()


async def get_job(session: AsyncSession, job_id: str) -> Job | None:
    return await session.get(Job, job_id)


async def list_jobs(
    session: AsyncSession, *, user_id: str, source: str | None, offset: int, limit: int
) -> tuple[Sequence[Job], int]:
    conditions = [Job.user_id == user_id]
    if source is not None:
        conditions.append(Job.source == source)
    total = await session.scalar(select(func.count()).select_from(Job).where(*conditions))
    rows = await session.scalars(
        select(Job)
        .where(*conditions)
        .order_by(Job.created_at.desc(), Job.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return rows.all(), int(total or 0)


async def list_contacts(
    session: AsyncSession, *, job_id: str, offset: int, limit: int
) -> Sequence[Contact]:
    rows = await session.scalars(
        select(Contact)
        .where(Contact.job_id == job_id)
        .order_by(Contact.ordinal)
        .offset(offset)
        .limit(limit)
    )
    return rows.all()


def add_job(session: AsyncSession, job: Job) -> None:
    session.add(job)


async def insert_contacts(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Inserts contact rows (column names to values) in one statement, into the table rather
    than through the mapped class: the rows need none of the ORM's bookkeeping for each,
    which was 5 % of a 1000-contact submission's instructions."""
    if rows:
        await session.execute(insert(table_of(Contact)), rows)


async def add_intake(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Inserts a job's contacts as submitted (P218), rows of ``jobs.intake.intake_rows``."""
    if rows:
        await session.execute(insert(table_of(ContactIntake)), rows)


async def intake_groups(session: AsyncSession, job_id: str) -> list[int]:
    """The first ordinals of the job's groups of contacts kept as submitted, in order."""
    firsts = await session.scalars(
        select(ContactIntake.first_ordinal)
        .where(ContactIntake.job_id == job_id)
        .order_by(ContactIntake.first_ordinal)
    )
    return list(firsts)


async def take_intake(session: AsyncSession, job_id: str) -> list[tuple[int, list[dict[str, Any]]]]:
    """Removes and returns the job's groups of contacts kept as submitted as (first ordinal,
    records), in order."""
    taken = await kept_groups(session, job_id)
    if taken:
        await _delete_intake(session, ContactIntake.job_id == job_id)
    return taken


def _kept(job_id: str) -> Select[tuple[int, list[dict[str, Any]]]]:
    """The job's groups of contacts kept as submitted as (first ordinal, records), in order."""
    return (
        select(ContactIntake.first_ordinal, ContactIntake.contacts)
        .where(ContactIntake.job_id == job_id)
        .order_by(ContactIntake.first_ordinal)
    )


async def kept_groups(session: AsyncSession, job_id: str) -> list[tuple[int, list[dict[str, Any]]]]:
    """The job's groups of contacts kept as submitted as (first ordinal, records), in order."""
    return [(first, records) for first, records in await session.execute(_kept(job_id))]


async def next_kept_group(
    session: AsyncSession, job_id: str, *, after: int
) -> tuple[int, list[dict[str, Any]]] | None:
    """The job's first group of contacts kept as submitted past the ordinal ``after``, as
    (first ordinal, records)."""
    query = _kept(job_id).where(ContactIntake.first_ordinal > after).limit(1)
    group = (await session.execute(query)).first()
    return None if group is None else (group[0], group[1])


async def drop_kept_group(session: AsyncSession, job_id: str, *, first: int) -> bool:
    """Removes the job's group of contacts kept as submitted that starts at ``first``; False
    when it was no longer kept."""
    removed = await _delete_intake(
        session, ContactIntake.job_id == job_id, ContactIntake.first_ordinal == first
    )
    return removed > 0


async def _delete_intake(session: AsyncSession, *conditions: ColumnElement[bool]) -> int:
    """Removes the groups of contacts kept as submitted that meet ``conditions``; how many."""
    result = await session.execute(
        delete(ContactIntake).where(*conditions).execution_options(synchronize_session=False)
    )
    return changed_rows(result)


async def claim(session: AsyncSession, job_id: str, *, now: datetime, until: datetime) -> bool:
    """Takes the job's processing lease unless another worker holds a live one. The lease's
    end, ``until``, is the holder's token: it renews, checks and releases the lease by it."""
    result = await session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            Job.status.in_(ACTIVE_STATES),
            or_(Job.lease_until.is_(None), Job.lease_until < now),
        )
        .values(status="Processing", lease_until=until, updated_at=now)
    )
    return bool(getattr(result, "rowcount", 0))


async def lapsed_lease(session: AsyncSession, job_id: str, *, now: datetime) -> datetime | None:
    """When the lease of a job still ``Processing`` ran out, if it did: a worker held the job
    and neither renewed nor released it (it died, or stalled), so a claim now takes it over
    (P151). None for a job free (no lease: never taken, or given up) or held."""
    lapsed: datetime | None = await session.scalar(
        select(Job.lease_until).where(
            Job.id == job_id,
            Job.status == "Processing",
            Job.lease_until.is_not(None),
            Job.lease_until < now,
        )
    )
    return lapsed


async def renew_lease(
    session: AsyncSession, job_id: str, *, held: datetime, until: datetime
) -> bool:
    """Moves the end of the lease from ``held`` to ``until``; False when the lease is no
    longer the caller's (it ran out and another worker took it, or the job ended)."""
    result = await session.execute(
        update(Job).where(Job.id == job_id, Job.lease_until == held).values(lease_until=until)
    )
    return bool(getattr(result, "rowcount", 0))


async def holds_lease(session: AsyncSession, job_id: str, *, held: datetime) -> bool:
    """Whether the caller still holds the job, locking its row for the rest of the
    transaction (PostgreSQL) so that no other worker can take it before the commit."""
    found = await session.scalar(
        select(Job.id).where(Job.id == job_id, Job.lease_until == held).with_for_update()
    )
    return found is not None


async def release_lease(session: AsyncSession, job_id: str, *, held: datetime) -> None:
    """Gives the job up for any worker to take at once, if the caller still holds it."""
    await session.execute(
        update(Job).where(Job.id == job_id, Job.lease_until == held).values(lease_until=None)
    )


async def job_status(session: AsyncSession, job_id: str) -> str | None:
    """The job's status; None when there is no such job (erased)."""
    status: str | None = await session.scalar(select(Job.status).where(Job.id == job_id))
    return status


# -- erasing a job (P132) -----------------------------------------------------------------------


async def lock_job(session: AsyncSession, job_id: str) -> bool:
    """Locks the job's row for the rest of the transaction (PostgreSQL; SQLite's writer holds
    the database), as a worker's write of the job's results does first: the two take turns.
    False when the job is gone."""
    found = await session.scalar(select(Job.id).where(Job.id == job_id).with_for_update())
    return found is not None


def contact_ids_of(job_id: str) -> Select[str]:
    """The ids of the job's contacts, as a subquery."""
    return select(Contact.id).where(Contact.job_id == job_id)


async def delete_job(session: AsyncSession, job_id: str) -> None:
    """Deletes the job, its contacts (their results with them, and those still kept as
    submitted) and the rows of its file it left out."""
    await session.execute(
        delete(RejectedRow)
        .where(RejectedRow.job_id == job_id)
        .execution_options(synchronize_session=False)
    )
    await _delete_intake(session, ContactIntake.job_id == job_id)
    await session.execute(
        delete(Contact).where(Contact.job_id == job_id).execution_options(synchronize_session=False)
    )
    await session.execute(delete(Job).where(Job.id == job_id))


_CONTACT_ROW = [getattr(Contact, field.name) for field in fields(ContactRow)]


async def pending_contacts(
    session: AsyncSession, job_id: str, limit: int, *, after: int, before: int | None = None
) -> list[ContactRow]:
    """The job's first ``limit`` pending contacts in order past the ordinal ``after`` (and
    before ``before``)."""
    conditions = [Contact.job_id == job_id, Contact.state == "pending", Contact.ordinal > after]
    if before is not None:
        conditions.append(Contact.ordinal < before)
    rows = await session.execute(
        select(*_CONTACT_ROW).where(*conditions).order_by(Contact.ordinal).limit(limit)
    )
    return [ContactRow(*row) for row in rows]


async def scored_contacts(session: AsyncSession, job_id: str) -> Sequence[Contact]:
    rows = await session.scalars(
        select(Contact)
        .where(Contact.job_id == job_id, Contact.state == "scored")
        .order_by(Contact.ordinal)
    )
    return rows.all()


async def pending_contact_fields(
    session: AsyncSession, job_id: str
) -> list[tuple[str, dict[str, Any]]]:
    rows = await session.execute(
        select(Contact.id, Contact.fields).where(
            Contact.job_id == job_id, Contact.state == "pending"
        )
    )
    return [(contact_id, fields) for contact_id, fields in rows]


async def save_contact_results(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Updates contacts by id, one statement (executemany) for each set of columns the rows
    set; each row has ``id`` and the columns to set."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(sorted(name for name in row if name != "id"))].append(row)
    table = table_of(Contact)
    for names, group in groups.items():
        statement = (
            update(table)
            .where(table.c.id == bindparam("b_id"))
            .values({name: bindparam(f"b_{name}") for name in names})
        )
        await session.execute(
            statement, [{f"b_{name}": value for name, value in row.items()} for row in group]
        )


async def record_progress(
    session: AsyncSession,
    job_id: str,
    *,
    processed: int,
    rejected: int,
    now: datetime,
) -> None:
    await session.execute(
        update(Job)
        .where(Job.id == job_id)
        .values(
            processed_count=Job.processed_count + processed,
            enrichment_rejected_count=Job.enrichment_rejected_count + rejected,
            updated_at=now,
        )
    )


async def finalize(session: AsyncSession, job_id: str, *, status: str, now: datetime) -> bool:
    """Moves a processing job to its terminal state; True only for the call that did it."""
    result = await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == "Processing")
        .values(status=status, finalized_at=now, updated_at=now, lease_until=None)
    )
    return bool(getattr(result, "rowcount", 0))


async def add_enrichment_tallies(session: AsyncSession, job: Job, tally: Tally) -> None:
    """Adds a batch's counts to the job's tallies by source (P205), making the ones not
    there yet; in key order, so that two writers lock alike."""
    if not tally:
        return
    statement = upsert(session, EnrichmentTally)
    statement = statement.on_conflict_do_update(
        index_elements=["job_id", "source", "own_key"],
        set_={
            name: getattr(EnrichmentTally, name) + getattr(statement.excluded, name)
            for name in ("tried", "hits", "named")
        },
    )
    rows = [
        {
            "job_id": job.id,
            "source": source,
            "own_key": own_key,
            "client_id": job.client_id,
            "job_created_at": job.created_at,
            "tried": counts.tried,
            "hits": counts.hits,
            "named": counts.named,
        }
        for (source, own_key), counts in sorted(tally.items())
    ]
    await session.execute(statement, rows)


async def count_found_with_own_keys(session: AsyncSession, job_id: str) -> int:
    """The job's scored contacts whose new numbers all came through the client's own
    provider keys (P204)."""
    found = await session.scalar(
        select(func.count())
        .select_from(Contact)
        .where(
            Contact.job_id == job_id,
            Contact.state == "scored",
            Contact.enrichment_own_key.is_(True),
        )
    )
    return found or 0


async def set_credits_refunded(session: AsyncSession, job_id: str, credits: Decimal) -> None:
    await session.execute(update(Job).where(Job.id == job_id).values(credits_refunded=credits))


# -- reads for a job's page and its results download ------------------------------------------


@dataclass(frozen=True, slots=True)
class ResultRow:
    """What a contact's line of a results download needs, without the rest of its row."""

    ordinal: int
    fields: dict[str, Any]
    phones: list[dict[str, Any]]
    best_phone: dict[str, Any] | None
    lead_status: str
    source_row: list[str] | None
    # Set for a contact enrichment rejected.
    rejected_reason: str | None = None
    # The types the sources gave the numbers enrichment found, in the order of their entries.
    enriched_types: list[str | None] | None = None


async def result_rows(
    session: AsyncSession, job_id: str, *, after: int, limit: int, uploaded: bool
) -> list[ResultRow]:
    """The job's next ``limit`` contacts past ordinal ``after``, in order (keyset pagination
    on the (job_id, ordinal) index: every batch costs the same however far in it is). A job
    made from an uploaded file (``uploaded``) reads each contact's source row and, of its
    fields, only its address (``stateProvince``, ``timeZone``), any other job the source row
    not: decoding JSON is most of the time a batch takes."""
    own = Contact.source_row if uploaded else Contact.fields
    query = select(
        Contact.ordinal,
        own,
        Contact.phones,
        Contact.best_phone,
        Contact.lead_status,
        Contact.rejected_reason,
        Contact.enriched_types,
    )
    if uploaded:
        # The address alone, which the call verdicts read (P177), not the whole fields.
        query = query.add_columns(
            Contact.fields["stateProvince"].as_string(), Contact.fields["timeZone"].as_string()
        )
    rows = await session.execute(
        query.where(Contact.job_id == job_id, Contact.ordinal > after)
        .order_by(Contact.ordinal)
        .limit(limit)
    )
    if uploaded:
        return [
            ResultRow(
                ordinal,
                {"stateProvince": state, "timeZone": zone},
                phones,
                best,
                lead,
                cells,
                reason,
                found,
            )
            for ordinal, cells, phones, best, lead, reason, found, state, zone in rows
        ]
    return [
        ResultRow(ordinal, fields, phones, best, lead, None, reason, found)
        for ordinal, fields, phones, best, lead, reason, found in rows
    ]


async def max_phone_count(session: AsyncSession, job_id: str) -> int:
    """The largest number of phone entries of one of the job's contacts."""
    count = await session.scalar(
        select(func.max(func.json_array_length(Contact.phones))).where(Contact.job_id == job_id)
    )
    return int(count or 0)


async def count_by_lead_status(session: AsyncSession, job_id: str) -> dict[str, int]:
    rows = await session.execute(
        select(Contact.lead_status, func.count())
        .where(Contact.job_id == job_id)
        .group_by(Contact.lead_status)
    )
    return {status: int(count) for status, count in rows}


async def count_phones_by_status(session: AsyncSession, job_id: str) -> dict[str | None, int]:
    """How many phone entries of the job's contacts have each status (None: not scored)."""
    if session.get_bind().dialect.name == "sqlite":
        query = (
            "SELECT json_extract(entry.value, '$.status') AS status, count(*) "
            "FROM contacts, json_each(contacts.phones) AS entry "
            "WHERE contacts.job_id = :job_id GROUP BY status"
        )
    else:
        query = (
            "SELECT entry ->> 'status' AS status, count(*) "
            "FROM contacts, json_array_elements(contacts.phones) AS entry "
            "WHERE contacts.job_id = :job_id GROUP BY status"
        )
    rows = await session.execute(text(query), {"job_id": job_id})
    return {status: int(count) for status, count in rows}


# -- rows of an uploaded file left out of its job ---------------------------------------------


async def add_rejected_rows(
    session: AsyncSession, job_id: str, rows: Sequence[tuple[int, list[str], str]]
) -> None:
    """Keeps ``(row index, cells, reason)`` of each row the job left out."""
    if rows:
        await session.execute(
            insert(RejectedRow),
            [{"job_id": job_id, "row_index": i, "cells": c, "reason": r} for i, c, r in rows],
        )


async def rejected_rows(
    session: AsyncSession, job_id: str, *, after: int = -1, limit: int
) -> list[tuple[int, list[str], str]]:
    """The job's rejected rows past row index ``after``, in the file's order."""
    rows = await session.execute(
        select(RejectedRow.row_index, RejectedRow.cells, RejectedRow.reason)
        .where(RejectedRow.job_id == job_id, RejectedRow.row_index > after)
        .order_by(RejectedRow.row_index)
        .limit(limit)
    )
    return [(index, list(cells), reason) for index, cells, reason in rows]
