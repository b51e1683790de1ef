"""A job's accepted contacts kept as they were submitted until their rows are written (P218).

A submission writes its accepted contacts as one row of ``contact_intake`` for each 250,
in its own transaction with the charge and the job: writing a row for each contact was half
of a 1000-contact submission's time. The worker that takes the job writes their contact
rows first, a group a transaction; a read of the job's contacts that comes before it writes
them itself (``rows_ready``). Either way the rows are the same, and a contact has its id from
then on: no one sees a contact before it has its row."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.jobs import repository as repo
from dialscore.jobs.schemas import NewContact
from dialscore.kit.clock import new_id
from dialscore.kit.db import Database
from dialscore.models import Job
from dialscore.scoring.engine import unscored

# Contacts kept in one intake row, and written as contact rows in one transaction: as many
# as a batch of the job by default, so that the worker's write of them holds SQLite's write
# lock from a request no longer than a batch's does.
GROUP = 250
# The parts of a contact that are left out of its record when they have no value.
_OPTIONAL = ("unmapped", "callback_url", "enrichment_contact_id", "enriched_types", "source_row")


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


def contact_row(job: Job, ordinal: int, record: dict[str, Any]) -> dict[str, Any]:
    """A pending contact's row (column names to values), as of the job's submission."""
    fields = record["fields"]
    submitted: datetime = job.created_at
    return {
        "id": new_id(),
        "job_id": job.id,
        "client_id": job.client_id,
        "user_id": job.user_id,
        "ordinal": ordinal,
        "state": "pending",
        "first_name": fields.get("firstName"),
        "last_name": fields.get("lastName"),
        "email": fields.get("email"),
        "company_account": fields.get("companyAccount"),
        "linkedin_url": fields.get("linkedInUrl"),
        "fields": fields,
        "unmapped_fields": record.get("unmapped", {}),
        "phones": record["phones"],
        "lead_status": "Uncontacted",
        "best_phone": None,
        "callback_url": record.get("callback_url"),
        "enrichment_contact_id": record.get("enrichment_contact_id"),
        "enriched_types": record.get("enriched_types"),
        "source_row": record.get("source_row"),
        "created_at": submitted,
        "updated_at": submitted,
    }


async def write_rows(session: AsyncSession, job: Job, *, first: int | None = None) -> None:
    """Writes as rows the job's contacts kept as submitted (all of them, or the group whose
    first ordinal is ``first``) and removes them from the intake, in the caller's write
    transaction, which holds the job (its lease, or ``repo.lock_job``)."""
    for first_ordinal, records in await repo.take_intake(session, job.id, first=first):
        rows = [contact_row(job, first_ordinal + i, r) for i, r in enumerate(records)]
        await repo.insert_contacts(session, rows)


async def rows_ready(db: Database, session: AsyncSession, job: Job) -> None:
    """Before ``session`` reads the job's contacts: writes the rows of those still kept as
    submitted, if the worker has not come to the job yet, in a unit of work of its own; then
    ends ``session``'s transaction, so that its next read sees them (on SQLite a read
    transaction keeps what it saw first)."""
    if job.status not in repo.ACTIVE_STATES or not await repo.intake_groups(session, job.id):
        return
    async with db.unit_of_work() as writing:
        if await repo.lock_job(writing, job.id):
            await write_rows(writing, job)
    await session.commit()
