"""A job's accepted contacts kept as they were submitted until their rows are written (P218,
P220).

A submission writes its accepted contacts as one row of ``contact_intake`` for each 250,
in its own transaction with the charge and the job: writing a row for each contact was half
of a 1000-contact submission's time. The worker scores a kept group's contacts from it and
writes their rows once, scored, in the transaction that removes the group (``next_batch``,
``save_batch``); a read of the job's contacts that comes before it writes the rows of the
groups still kept itself, pending (``rows_ready``), and the worker then updates them. A
contact's id comes from its job's and its place in it (``contact_id``), so that whoever
writes its row gives it the same one: no one sees a contact before it has its row, and its
id never changes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.jobs import repository as repo
from dialscore.jobs.schemas import ContactRow, NewContact
from dialscore.kit.db import Database
from dialscore.models import Job
from dialscore.scoring.engine import unscored

# Contacts kept in one intake row: as many as a batch of the job by default, so that a batch
# is a group, whose rows its write makes (P220), and holds SQLite's write lock from a request
# no longer than a batch of pending rows does.
GROUP = 250
# The parts of a contact that are left out of its record when they have no value.
_OPTIONAL = ("unmapped", "callback_url", "enrichment_contact_id", "enriched_types", "source_row")
# The namespace of contact ids (``contact_id``).
_CONTACT_IDS = uuid.UUID("5d1c2f0e-8b7a-4f43-9a51-0c6e2d9b7f14")
# The columns a pending contact has no value of yet: every row of a group is written with all
# of them, so that scored, rejected and pending rows are inserted in one statement.
_NOT_YET: dict[str, Any] = {
    "last_name_key": None,
    "email_key": None,
    "linkedin_key": None,
    "company_key": None,
    "first_initial": None,
    "rejected_reason": None,
    "enrichment_source": None,
    "enrichment_own_key": False,
    "scored_at": None,
}
_CONTACT_ROW = tuple(field.name for field in fields(ContactRow))


# A job's start works out the ids of all its kept contacts (to index their numbers) and its
# batches the same ids again (to write their rows): kept for a job of up to this many
# contacts, the second time costs a lookup instead of a UUID (15 µs).
_IDS_KEPT = 4096


@lru_cache(maxsize=_IDS_KEPT)
def contact_id(job_id: str, ordinal: int) -> str:
    """The id of the job's contact at ``ordinal``, the same whoever writes its row."""
    return str(uuid.uuid5(_CONTACT_IDS, f"{job_id}/{ordinal}"))


def intake_record(contact: NewContact) -> dict[str, Any]:
    """What a contact's row is made from: its fields, its numbers as an unscored contact
    shows them, and what else it came with."""
    record: dict[str, Any] = {"fields": contact.fields, "phones": unscored(contact.phones).phones}
    for name in _OPTIONAL:
        value = getattr(contact, name)
        if value is not None and value != {}:
            record[name] = value
    return record


def intake_rows(job_id: str, contacts: Sequence[NewContact]) -> list[dict[str, Any]]:
    """The job's intake rows (column names to values): its contacts in order, ``GROUP`` a
    row, numbered from 1."""
    return [
        {
            "job_id": job_id,
            "first_ordinal": start + 1,
            "contacts": [intake_record(c) for c in contacts[start : start + GROUP]],
        }
        for start in range(0, len(contacts), GROUP)
    ]


def _job_columns(job: Job) -> dict[str, Any]:
    """The columns every pending contact row of the job has alike, as of its submission."""
    submitted: datetime = job.created_at
    return {
        "job_id": job.id,
        "client_id": job.client_id,
        "user_id": job.user_id,
        "state": "pending",
        "lead_status": "Uncontacted",
        "best_phone": None,
        "created_at": submitted,
        "updated_at": submitted,
        **_NOT_YET,
    }


def contact_row(shared: dict[str, Any], ordinal: int, record: dict[str, Any]) -> dict[str, Any]:
    """A pending contact's row (every column to its value): ``shared``, the job's columns
    (``_job_columns``), and the contact's own."""
    fields = record["fields"]
    return {
        **shared,
        "id": contact_id(shared["job_id"], ordinal),
        "ordinal": ordinal,
        "first_name": fields.get("firstName"),
        "last_name": fields.get("lastName"),
        "email": fields.get("email"),
        "company_account": fields.get("companyAccount"),
        "linkedin_url": fields.get("linkedInUrl"),
        "fields": fields,
        "unmapped_fields": record.get("unmapped", {}),
        "phones": record["phones"],
        "callback_url": record.get("callback_url"),
        "enrichment_contact_id": record.get("enrichment_contact_id"),
        "enriched_types": record.get("enriched_types"),
        "source_row": record.get("source_row"),
    }


def _group_rows(job: Job, first: int, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    shared = _job_columns(job)
    return [contact_row(shared, first + i, record) for i, record in enumerate(records)]


async def write_rows(session: AsyncSession, job: Job) -> None:
    """Writes as pending rows the job's contacts kept as submitted and removes them from the
    intake, in the caller's write transaction, which holds the job (``repo.lock_job``)."""
    for first, records in await repo.take_intake(session, job.id):
        await repo.insert_contacts(session, _group_rows(job, first, records))


async def rows_ready(db: Database, session: AsyncSession, job: Job) -> None:
    """Before ``session`` reads the job's contacts: writes the rows of those still kept as
    submitted, if the worker has not come to them yet, in a unit of work of its own; then
    ends ``session``'s transaction, so that its next read sees them (on SQLite a read
    transaction keeps what it saw first)."""
    if job.status not in repo.ACTIVE_STATES or not await repo.intake_groups(session, job.id):
        return
    async with db.unit_of_work() as writing:
        if await repo.lock_job(writing, job.id):
            await write_rows(writing, job)
    await session.commit()


# -- the worker's batches ----------------------------------------------------------------------


async def unscored_fields(session: AsyncSession, job: Job) -> dict[str, dict[str, Any]]:
    """The fields of each of the job's contacts not scored yet, by id: those still kept as
    submitted, and pending rows. The kept ones are read first: a read of the job's contacts
    may write their rows between the two queries (on PostgreSQL each sees what was committed
    before it), and contacts only ever move from the intake to the rows, so the second query
    then finds them as rows."""
    found = {
        contact_id(job.id, first + i): record["fields"]
        for first, records in await repo.kept_groups(session, job.id)
        for i, record in enumerate(records)
    }
    found.update(await repo.pending_contact_fields(session, job.id))
    return found


@dataclass(frozen=True)
class Batch:
    """Contacts of a job scored and saved together. For the first contacts of a group still
    kept as submitted: ``rows``, their rows, which the batch's write makes with the rest of
    the group's. For any of a kept group's: ``rest``, the rows of the group after them,
    pending from then on."""

    contacts: list[ContactRow]
    rows: list[dict[str, Any]] | None = None
    rest: list[dict[str, Any]] = field(default_factory=list)


def _batch(rows: list[dict[str, Any]], limit: int, *, first: bool) -> Batch:
    """The first ``limit`` of a kept group's ``rows`` (all of the group when ``first``, else
    those after a batch of it) as a batch."""
    taken = rows[:limit]
    contacts = [ContactRow(*(row[name] for name in _CONTACT_ROW)) for row in taken]
    return Batch(contacts, taken if first else None, rows[limit:])


async def next_batch(
    session: AsyncSession, job: Job, *, limit: int, after: Batch | None = None
) -> Batch:
    """Up to ``limit`` of the job's contacts not scored yet that come first (after the batch
    ``after``, which may not be saved yet): pending rows, or contacts of a group kept as
    submitted; none when all are scored."""
    if after is not None and after.rest:
        return _batch(after.rest, limit, first=False)
    ordinal = 0 if after is None else after.contacts[-1].ordinal
    kept = await repo.next_kept_group(session, job.id, after=ordinal)
    before = None if kept is None else kept[0]
    pending = await repo.pending_contacts(session, job.id, limit, after=ordinal, before=before)
    if pending or kept is None:
        return Batch(pending)
    return _batch(_group_rows(job, *kept), limit, first=True)


async def save_batch(session: AsyncSession, batch: Batch, results: list[dict[str, Any]]) -> None:
    """Saves the results of a batch's contacts (each ``id`` and the columns to set), in the
    caller's write transaction, which holds the job's lease. The batch's group, if still
    kept, is removed and written as rows at once, the batch's contacts with their results and
    the others pending; rows written meanwhile (by a read of them) are updated."""
    if batch.rows is None or not await repo.drop_kept_group(
        session, batch.contacts[0].job_id, first=batch.contacts[0].ordinal
    ):
        await repo.save_contact_results(session, results)
        return
    saved = [{**row, **result} for row, result in zip(batch.rows, results, strict=True)]
    await repo.insert_contacts(session, saved + batch.rest)
