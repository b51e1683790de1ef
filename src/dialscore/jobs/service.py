"""Job use cases: creating a job with its contacts, charge and processing message; scoring a
finished job again; reading jobs and their contacts; erasing a job."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import EffectivePlan, Principal
from dialscore.jobs import intake
from dialscore.jobs import repository as repo
from dialscore.jobs.repository import ResultRow
from dialscore.jobs.schemas import MAX_CONTACTS, TERMINAL_STATES, Kind, NewContact, OpenedJob
from dialscore.kit import metrics
from dialscore.kit.clock import new_id, require_uuid
from dialscore.kit.db import Database
from dialscore.kit.errors import BadRequest, Conflict, Forbidden, NotFound
from dialscore.kit.pagination import PageRequest
from dialscore.models import Contact, Job
from dialscore.outbox import messages as outbox
from dialscore.scoring import service as scoring_service
from dialscore.scoring.engine import PHONE_STATUSES
from dialscore.scoring.numbers import enriched_numbers, parse_contact_phones
from dialscore.uploads import service as uploads
from dialscore.webhooks import retention as webhook_retention

log = structlog.get_logger(__name__)

PROCESS_JOB = "process_job"

_FEATURES: dict[tuple[Kind, str], tuple[str, str]] = {
    ("scoring", "lightning"): ("lightning_scoring", "lightning scoring"),
    ("scoring", "core"): ("core_scoring", "core scoring"),
    ("enrichment", "lightning"): ("enrichment_with_lightning", "enrichment with lightning"),
    ("enrichment", "core"): ("enrichment_with_core", "enrichment with core"),
}


def require_feature(plan: EffectivePlan, kind: Kind, scoring_type: str) -> None:
    """403 unless the plan includes the feature a job of this kind and scoring type needs."""
    attribute, label = _FEATURES[(kind, scoring_type)]
    if not getattr(plan, attribute):
        raise Forbidden(f"the '{plan.name}' plan does not include {label}")


def cost_of(plan: EffectivePlan, kind: Kind, contacts: Sequence[NewContact]) -> tuple[int, Decimal]:
    """What accepting ``contacts`` costs (D9): the units charged (valid distinct phones for
    scoring, contacts for enrichment) and the credits."""
    if kind == "scoring":
        units = sum(c.billable_phones for c in contacts)
        return units, plan.cost_per_phone * units
    return len(contacts), plan.cost_per_contact * len(contacts)


async def create_job(
    session: AsyncSession,
    *,
    principal: Principal,
    kind: Kind,
    job_type: str,
    scoring_type: str,
    name: str | None,
    total: int,
    contacts: Sequence[NewContact],
    now: datetime,
    reason: str,
    source: str = "api",
    upload_columns: list[str] | None = None,
) -> OpenedJob:
    """Charges the contacts (D9: scoring per valid distinct phone, enrichment per contact)
    and creates their job, its contacts as submitted (P218) and the message that starts
    processing, in the caller's transaction; no job when there are no contacts (P1). A job
    made from an uploaded file keeps the file's header in ``upload_columns``."""
    units, cost = cost_of(principal.plan, kind, contacts)
    if not contacts:
        remaining = await accounts.current_balance(session, principal.client_id)
        metrics.observe_submission(job_type, source, total=total, accepted=0)
        return OpenedJob(None, Decimal(0), remaining, units, 0)
    job = Job(
        id=new_id(),
        client_id=principal.client_id,
        user_id=principal.user_id,
        job_type=job_type,
        scoring_type=scoring_type,
        name=name or f"{job_type} {now.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        source=source,
        upload_columns=upload_columns,
        status="Init",
        total_count=total,
        accepted_count=len(contacts),
        processed_count=0,
        enrichment_rejected_count=0,
        created_at=now,
        updated_at=now,
    )

    # The contacts are kept as submitted, a row for each 250, and written as rows of their
    # own by the worker (P218). Those rows are built before the first write, the charge: on
    # SQLite that write takes the database's one write lock for the rest of the transaction,
    # and building them would hold it from the worker and other requests (P210). A job from
    # a large uploaded file: its rows take a while to build, so they are built off the event
    # loop, letting other requests run.
    if len(contacts) <= MAX_CONTACTS:
        built = intake.intake_rows(job.id, contacts)
    else:
        built = await asyncio.to_thread(intake.intake_rows, job.id, contacts)
    remaining = await accounts.charge(
        session,
        client_id=principal.client_id,
        user_id=principal.user_id,
        amount=cost,
        reason=reason,
        job_id=job.id,
        key_id=principal.key_id,
    )
    repo.add_job(session, job)
    await session.flush()
    await repo.add_intake(session, built)
    outbox.enqueue(session, PROCESS_JOB, {"job_id": job.id})
    metrics.observe_submission(job_type, source, total=total, accepted=len(contacts))
    return OpenedJob(job.id, cost, remaining, units, len(contacts))


async def rescore(
    session: AsyncSession, *, principal: Principal, job_id: str, now: datetime, name: str | None
) -> OpenedJob:
    """A ``rescoring`` job scoring the scored contacts of a finished job again, with the
    evidence known now, and the numbers enrichment found the first time; charged like a
    scoring submission of the same numbers."""
    finished = await job_of(session, principal, job_id)
    if finished.status not in TERMINAL_STATES:
        raise Conflict("the job is still being processed: rescore it once it has finished")
    require_feature(principal.plan, "scoring", finished.scoring_type)
    scored = await repo.scored_contacts(session, finished.id)
    if not scored:
        raise BadRequest("the job has no scored contacts to rescore")
    contacts = [
        NewContact(
            fields=dict(c.fields),
            unmapped=c.unmapped_fields,
            phones=parse_contact_phones(
                dict(c.fields), enriched_numbers(c.phones, c.enriched_types)
            ),
            enrichment_contact_id=c.enrichment_contact_id,
            enriched_types=c.enriched_types,
        )
        for c in scored
    ]
    return await create_job(
        session,
        principal=principal,
        kind="scoring",
        job_type="rescoring",
        scoring_type=finished.scoring_type,
        name=name,
        total=len(contacts),
        contacts=contacts,
        now=now,
        reason=f"rescoring of job {finished.id}",
    )


async def job_of(session: AsyncSession, principal: Principal, job_id: str) -> Job:
    """The principal's own job; 400 for a malformed id, 404 for anyone else's (D1)."""
    job = await repo.get_job_of_user(session, require_uuid(job_id, "jobId"), principal.user_id)
    if job is None:
        raise NotFound("job not found")
    return job


async def erase_job(
    session: AsyncSession, principal: Principal, job_id: str, *, now: datetime
) -> Job:
    """Erases the principal's own job, in the caller's transaction (P132): its contacts with
    their results, the rows of its file it left out, the upload it came from, the numbers its
    contacts carried, the bodies of its webhook deliveries (the pending ones cancelled, never
    sent) and its processing message. The calls reported for its contacts stay, with the
    contact ids they were reported for; the credit ledger keeps its charge with the job's
    id. A job still running is stopped: its worker finds the job gone at its next write and
    writes nothing more (P133). The erased job, as it was; 400 for a malformed id, 404 for
    anyone else's (D1)."""
    job = await job_of(session, principal, job_id)
    # First, as a worker writing the job's results locks it first: one waits for the other.
    if not await repo.lock_job(session, job.id):
        raise NotFound("job not found")
    if job.status == "Processing":
        # Its worker indexed the numbers of the contacts it still keeps as submitted, by
        # their ids (P220): their rows first, so that those numbers are forgotten too.
        await intake.write_rows(session, job)
    await scoring_service.forget_contacts(session, repo.contact_ids_of(job.id))
    cancelled = await webhook_retention.erase_job_deliveries(session, job.id, now=now)
    await uploads.forget_of_job(session, user_id=job.user_id, job_id=job.id)
    await outbox.discard(session, PROCESS_JOB, key="job_id", value=job.id)
    await repo.delete_job(session, job.id)
    log.info(
        "erased a job",
        job_id=job.id,
        status=job.status,
        contacts=job.accepted_count,
        deliveries_cancelled=cancelled,
    )
    return job


async def list_jobs(
    session: AsyncSession, principal: Principal, *, source: str, page: PageRequest
) -> tuple[Sequence[Job], int]:
    return await repo.list_jobs(
        session,
        user_id=principal.user_id,
        source=None if source == "all" else source,
        offset=page.offset,
        limit=page.limit,
    )


async def job_contacts(
    db: Database, session: AsyncSession, principal: Principal, job_id: str, page: PageRequest
) -> tuple[Sequence[Contact], int]:
    """A page of the principal's job's contacts in order, and how many it has; those the
    worker has not written as rows yet are written first (P218)."""
    job = await job_of(session, principal, job_id)
    await intake.rows_ready(db, session, job)
    contacts = await repo.list_contacts(
        session, job_id=job.id, offset=page.offset, limit=page.limit
    )
    return contacts, job.accepted_count


# -- a job's summary and its results, for the web app's job page and download -----------------

LEAD_STATUSES = ("P1", "P2", "P3", "Needs Attention", "No Numbers Found", "Uncontacted")
RESULT_BATCH = 500


@dataclass(frozen=True)
class JobSummary:
    """How many of a job's contacts have each ``leadStatus``, and how many of their phones
    each phone status (``None``: not scored), both in the spec's order, zeros left out."""

    lead_statuses: list[tuple[str, int]]
    phone_statuses: list[tuple[str | None, int]]


async def job_summary(session: AsyncSession, job: Job) -> JobSummary:
    leads = await repo.count_by_lead_status(session, job.id)
    phones = await repo.count_phones_by_status(session, job.id)
    lead_order = [*LEAD_STATUSES, *sorted(s for s in leads if s not in LEAD_STATUSES)]
    phone_order: list[str | None] = [
        *PHONE_STATUSES,
        *sorted(s for s in phones if s is not None and s not in PHONE_STATUSES),
        None,
    ]
    return JobSummary(
        [(s, leads[s]) for s in lead_order if leads.get(s)],
        [(s, phones[s]) for s in phone_order if phones.get(s)],
    )


async def max_phone_count(session: AsyncSession, job: Job) -> int:
    return await repo.max_phone_count(session, job.id)


async def result_batches(
    sessions: async_sessionmaker[AsyncSession], job: Job, *, batch: int = RESULT_BATCH
) -> AsyncIterator[list[ResultRow]]:
    """The job's contacts in order, ``batch`` at a time, each batch read in a session of its
    own: a large job is never held whole, nor a read transaction held open between batches.
    A job made from an uploaded file has each contact's ``source_row`` (and of its ``fields``
    only ``stateProvince`` and ``timeZone``), any other its ``fields``."""
    after = 0
    uploaded = job.upload_columns is not None
    while True:
        async with sessions() as session:
            rows = await repo.result_rows(
                session, job.id, after=after, limit=batch, uploaded=uploaded
            )
        if not rows:
            return
        yield rows
        if len(rows) < batch:
            return
        after = rows[-1].ordinal


# -- what a job started from an uploaded file keeps of it -------------------------------------

REJECTED_BATCH = 1000


async def keep_upload(
    session: AsyncSession,
    job_id: str,
    *,
    mapping: list[str],
    rejected: Sequence[tuple[int, list[str], str]],
) -> None:
    """Keeps with a job started from an uploaded file the choice made for each column and the
    rows it left out (``(row index, cells, reason)``), in the caller's transaction."""
    job = await repo.get_job(session, job_id)
    if job is None:
        raise NotFound("job not found")
    job.upload_mapping = list(mapping)
    await repo.add_rejected_rows(session, job_id, rejected)


async def rejected_rows(
    session: AsyncSession, job: Job, *, limit: int
) -> list[tuple[int, list[str], str]]:
    """The first ``limit`` rows the job left out, in the file's order."""
    return await repo.rejected_rows(session, job.id, limit=limit)


async def rejected_batches(
    sessions: async_sessionmaker[AsyncSession], job: Job, *, batch: int = REJECTED_BATCH
) -> AsyncIterator[list[tuple[int, list[str], str]]]:
    """Every row the job left out, in the file's order, ``batch`` at a time, each batch read
    in a session of its own."""
    after = -1
    while True:
        async with sessions() as session:
            rows = await repo.rejected_rows(session, job.id, after=after, limit=batch)
        if rows:
            yield rows
        if len(rows) < batch:
            return
        after = rows[-1][0]
