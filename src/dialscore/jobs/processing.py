"""Processing a job: enrich and score its contacts in batches, emit their events, and move the
job to its terminal state once. Safe to run again after a crash or a redelivered message."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.compliance import Rules
from dialscore.enrichment.waterfall import NO_DATA_FOUND, EnrichmentSource
from dialscore.identity.keys import record_keys
from dialscore.jobs import callability, intake, refunds
from dialscore.jobs import repository as repo
from dialscore.jobs.enriching import Enriched, EnrichedBatch, abandon, enriching
from dialscore.jobs.events import JobCompletedPayload
from dialscore.jobs.lease import JobLease
from dialscore.jobs.schemas import (
    ENRICHMENT_JOB_TYPES,
    TERMINAL_STATES,
    ContactRow,
    present_callback_contact,
    present_contact,
)
from dialscore.kit import metrics
from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.db import Database
from dialscore.kit.envelope import number
from dialscore.kit.foreground import Step, any_time
from dialscore.kit.leases import LeaseLost, WorkStopped, beat_seconds, keep_alive
from dialscore.models import Job
from dialscore.outbox import messages as outbox
from dialscore.scoring import rnd_record
from dialscore.scoring import service as scoring
from dialscore.scoring.engine import ContactScore
from dialscore.scoring.lines import RateScale
from dialscore.scoring.providers import VerificationProvider
from dialscore.scoring.reassigned import ReassignedNumbers
from dialscore.webhooks import service as webhooks
from dialscore.webhooks.schemas import CONTACT_SCORED, JOB_COMPLETED

log = structlog.get_logger(__name__)


# What makes the waterfall of a job's client, given its id.
SourcesOf = Callable[[str], Awaitable[Sequence[EnrichmentSource]]]


@dataclass(frozen=True)
class ProcessingSettings:
    batch_size: int
    # How long the job stays held without a renewal; the heartbeat renews it every third.
    job_lease: timedelta
    # DIALSCORE_COMPLIANCE_RULES: the rules the events' call verdicts follow (P177).
    compliance_rules: str | None = None


def _rejected(contact: ContactRow, now: datetime) -> dict[str, Any]:
    return {
        "id": contact.id,
        "state": "rejected",
        "rejected_reason": NO_DATA_FOUND,
        "updated_at": now,
    }


def _scored(
    contact: ContactRow,
    item: scoring.ScoringItem,
    score: ContactScore,
    enriched: Enriched,
    now: datetime,
) -> dict[str, Any]:
    # The keys enrichment finds a client's earlier contacts by: only scored ones are searched,
    # so they are written with the score, from the person the scoring read (P215).
    keys = record_keys(item.person)
    result: dict[str, Any] = {
        "id": contact.id,
        "state": "scored",
        "last_name_key": keys.last_name,
        "email_key": keys.email,
        "linkedin_key": keys.linkedin,
        "company_key": keys.company,
        "first_initial": keys.initial,
        "phones": score.phones,
        "lead_status": score.lead_status,
        "best_phone": score.best_phone,
        "enrichment_contact_id": enriched.record_id,
        # The types the sources gave the numbers they found, for scoring them again.
        "enriched_types": [hint for _, hint in enriched.numbers] or None,
        "scored_at": now,
        "updated_at": now,
    }
    if enriched.source is not None:
        result["enrichment_source"] = enriched.source
        result["enrichment_own_key"] = enriched.own_key
    return result


# What a saved result changes of the contact as its events present it.
_PRESENTED = frozenset(field.name for field in dataclasses.fields(ContactRow)) - {"id"}


def _apply(contacts: Sequence[ContactRow], results: list[dict[str, Any]]) -> list[ContactRow]:
    """The scored contacts as their results were saved, for their events."""
    return [
        replace(contact, **{name: value for name, value in result.items() if name in _PRESENTED})
        for contact, result in zip(contacts, results, strict=True)
        if result["state"] == "scored"
    ]


async def _present_events(
    session: AsyncSession,
    job: Job,
    scored: Sequence[ContactRow],
    *,
    rules: Rules,
    learnt: callability.JobLearnt,
) -> list[dict[str, Any]]:
    """The scored contacts as their job.contact.scored events show them, each phone with its
    call verdict as of the event's making (P177)."""
    return await callability.present_with_verdicts(
        session,
        client_id=job.client_id,
        presented=[present_contact(c) for c in scored],
        rules=rules,
        learnt=learnt,
    )


async def _score_and_save(
    lease: JobLease,
    job: Job,
    batch: intake.Batch,
    enriched_batch: EnrichedBatch,
    *,
    parsed: Mapping[str, scoring.ScoringItem],
    rate_scale: RateScale,
    verifiers: Sequence[VerificationProvider],
    reassigned: ReassignedNumbers | None,
    rules: Rules,
    learnt: callability.JobLearnt,
    step: Step,
) -> int:
    """Scores a batch's contacts with the numbers enrichment found (rejecting those it found
    none for) and saves them with their events and the job's progress, in one transaction
    that commits only while the job is still this worker's; the events written. ``parsed``
    holds the contacts' own numbers, read once for the job.

    The evidence is read, the contacts scored and their events made in a read transaction;
    the write transaction holds only the writes (P210): on SQLite it holds the database's one
    write lock, which a submission waits for meanwhile. Each is a ``step`` (P211, P219)."""
    contacts = batch.contacts
    found = enriched_batch.found
    core = job.scoring_type == "core"
    items = [
        parsed[contact.id]
        if not enriched.numbers and contact.id in parsed
        else scoring.item(contact.id, contact.fields, enriched.numbers)
        for contact, enriched in zip(contacts, found, strict=True)
        if enriched is not None
    ]
    verifications = {}
    if core and verifiers:
        numbers = sorted({p.e164 for it in items for p in it.phones if p.e164})
        verifications = await scoring.verify(verifiers, numbers)
    # Contacts with a consent date: their US numbers against the FCC database (P190), each
    # query recorded with the scores below (P195).
    asked_at = utcnow()
    checks = await scoring.check_reassigned(
        reassigned,
        items,
        {c.id: c.unmapped_fields for c, e in zip(contacts, found, strict=True) if e is not None},
    )
    async with step(), lease.db.read() as session:
        now = utcnow()
        scores = zip(
            items,
            await scoring.score_items(
                session,
                job.client_id,
                items,
                now=now.timestamp(),
                rate_scale=rate_scale,
                core=core,
                verifications=verifications,
                verifiers=verifiers,
                reassigned=checks,
            ),
            strict=True,
        )
        results = [
            _rejected(contact, now)
            if enriched is None
            else _scored(contact, *next(scores), enriched, now)
            for contact, enriched in zip(contacts, found, strict=True)
        ]
        any_scored = any(result["state"] == "scored" for result in results)

        @functools.cache
        def scored() -> list[ContactRow]:
            # Copied with their results only for events or callbacks, and once.
            return _apply(contacts, results)

        # Presented, and the verdicts worked out, only when someone listens.
        presented = None
        if any_scored and await webhooks.listened_to(
            session, user_id=job.user_id, event_type=CONTACT_SCORED
        ):
            presented = await _present_events(session, job, scored(), rules=rules, learnt=learnt)
    async with step(), lease.holding() as session:
        await intake.save_batch(session, batch, results)
        await repo.add_enrichment_tallies(session, job, enriched_batch.tally)
        await rnd_record.record_queries(
            session, client_id=job.client_id, job_id=job.id, checks=checks, asked_at=asked_at
        )
        if (
            any_scored
            and presented is None
            and await webhooks.listened_to(session, user_id=job.user_id, event_type=CONTACT_SCORED)
        ):
            # A subscription made since the read: its events are made here.
            presented = await _present_events(session, job, scored(), rules=rules, learnt=learnt)
        emitted = 0
        if presented:
            # One delivery per event and subscription listening now (emit asks again).
            emitted = await webhooks.emit(
                session,
                user_id=job.user_id,
                event_type=CONTACT_SCORED,
                payloads=(
                    {"contact": contact, "job": {"id": job.id, "type": job.job_type}}
                    for contact in presented
                ),
                job_id=job.id,
            )
        # Version 1 contacts with a callback URL: one callback each (D27), written with
        # the score like every event.
        calling_back = any(c.callback_url for c in contacts)
        emitted += await webhooks.queue_callbacks(
            session,
            user_id=job.user_id,
            job_id=job.id,
            callbacks=[
                (c.callback_url, present_callback_contact(c))
                for c in (scored() if calling_back else ())
                if c.callback_url
            ],
        )
        await repo.record_progress(
            session,
            job.id,
            processed=len(results),
            rejected=sum(1 for r in results if r["state"] == "rejected"),
            now=utcnow(),
        )
    metrics.observe_contacts(
        job.scoring_type,
        enriching=job.job_type in ENRICHMENT_JOB_TYPES,
        lead_statuses=[r.get("lead_status") for r in results],
    )
    return emitted


def _never() -> bool:
    return False


async def process_job(
    db: Database,
    *,
    job_id: str,
    outbox_id: int,
    settings: ProcessingSettings,
    sources: Sequence[EnrichmentSource] | SourcesOf = (),
    verifiers: Sequence[VerificationProvider] = (),
    reassigned: ReassignedNumbers | None = None,
    collect_all: bool = False,
    on_events: Callable[[], None] | None = None,
    should_stop: Callable[[], bool] = _never,
    rate_scales: scoring.RateScales | None = None,
    step: Step = any_time,
) -> str | None:
    """Scores every pending contact of the job in batches, then finalizes it once.

    Safe to run again after a crash or a redelivered message: the job lease keeps a second
    worker out (a heartbeat renews it while the job runs, and every write checks it), each
    batch commits its contacts with the job's progress, and the terminal transition is
    conditional. ``on_events`` is called after a commit that wrote webhook events. When
    ``should_stop`` says so between batches, ``WorkStopped`` is raised; then, as when the run
    is cancelled or fails, the job is given up for the next run at once. ``LeaseLost`` says
    that another worker took the job over. ``rate_scales`` keeps the clients' rate scales
    between jobs (without it, the job measures its client's). ``sources`` is the waterfall,
    or what makes the job's client's. Each write after the claim, each read of contacts to
    score (P221) and each batch's read of its evidence is a ``step``: in ``serve``, taken
    after the requests the process serves (P211) and in turn with its other jobs' steps
    (P219). Returns the terminal status set by this call, if any."""
    now = utcnow()
    until = now + settings.job_lease
    async with db.unit_of_work() as session:
        lapsed = await repo.lapsed_lease(session, job_id, now=now)
        if not await repo.claim(session, job_id, now=now, until=until):
            job = await repo.get_job(session, job_id)
            if job is None or job.status in TERMINAL_STATES:
                await outbox.finish(session, outbox_id)
            elif job.lease_until is not None:
                # Another worker holds the job: look again when its lease runs out.
                await outbox.defer(session, outbox_id, job.lease_until)
            return None
        job = await repo.get_job(session, job_id)
        assert job is not None
    if lapsed is not None:
        # The worker that held the job stopped renewing its lease: it died or stalled (P151).
        log.warning(
            "job taken over: its lease ran out while another worker held it",
            job_id=job_id,
            lease_ran_out_at=isoformat(lapsed),
            contacts_done=job.processed_count,
        )

    lease = JobLease(db, job_id, token=until, length=settings.job_lease)
    if callable(sources):
        sources = await sources(job.client_id) if job.job_type in ENRICHMENT_JOB_TYPES else ()
    work = _process(
        lease,
        job,
        outbox_id=outbox_id,
        settings=settings,
        sources=sources,
        verifiers=verifiers,
        reassigned=reassigned,
        collect_all=collect_all,
        on_events=on_events,
        should_stop=should_stop,
        rate_scales=rate_scales or scoring.RateScales(),
        step=step,
    )
    try:
        return await keep_alive(
            work,
            lease.renew,
            every=beat_seconds(settings.job_lease.total_seconds()),
            name=f"job {job_id}",
        )
    except LeaseLost:
        raise  # the job is another worker's now
    except (Exception, asyncio.CancelledError):
        # Stopped, cancelled or failed: the job is free for the next run at once, rather
        # than when the lease would have run out.
        with contextlib.suppress(Exception):
            await lease.release()
        raise


async def _process(
    lease: JobLease,
    job: Job,
    *,
    outbox_id: int,
    settings: ProcessingSettings,
    sources: Sequence[EnrichmentSource],
    verifiers: Sequence[VerificationProvider],
    reassigned: ReassignedNumbers | None,
    collect_all: bool,
    on_events: Callable[[], None] | None,
    should_stop: Callable[[], bool],
    rate_scales: scoring.RateScales,
    step: Step,
) -> str | None:
    db, job_id = lease.db, job.id
    rules = callability.rules_in_force(settings.compliance_rules)
    learnt = callability.JobLearnt(job.client_id)
    # The job's numbers are indexed before any is scored, so that every batch sees the
    # whole job when it looks for numbers shared by several people of one company.
    # They are read, parsed and keyed before the transaction that writes them (P210).
    async with step():
        async with db.read() as session:
            unscored = await intake.unscored_fields(session, job)
        parsed = {cid: scoring.item(cid, fields) for cid, fields in unscored.items()}
        carried = scoring.carried_numbers(job.client_id, list(parsed.values()))
    async with step(), lease.holding() as session:
        await scoring.index_numbers(session, carried)
    # The client's own calls scale the line types' rates, once for the whole job (P90).
    async with db.read() as session:
        rate_scale = await rate_scales.of(session, job.client_id, now=utcnow().timestamp())

    # Each batch is of pending rows, or of contacts still kept as submitted, whose rows its
    # write makes, scored (P220).
    async with step(), db.read() as session:
        batch = await intake.next_batch(session, job, limit=settings.batch_size)
    # Enrichment and verification call other services: outside any write transaction. The
    # next batch is enriched while this one is scored and saved, so that the sources' waits
    # on the database (or a provider) overlap with scoring's.
    upcoming = enriching(job, batch.contacts, sources, collect_all)
    try:
        while upcoming is not None:  # None once there is no batch
            if should_stop():
                raise WorkStopped(f"job {job_id} stopped between batches")
            enriched_batch = await upcoming
            async with step(), db.read() as session:
                following = await intake.next_batch(
                    session, job, limit=settings.batch_size, after=batch
                )
            upcoming = enriching(job, following.contacts, sources, collect_all)
            emitted = await _score_and_save(
                lease,
                job,
                batch,
                enriched_batch,
                parsed=parsed,
                rate_scale=rate_scale,
                verifiers=verifiers,
                reassigned=reassigned,
                rules=rules,
                learnt=learnt,
                step=step,
            )
            if emitted and on_events is not None:
                on_events()
            batch = following
    finally:
        await abandon(upcoming)

    async with step():
        finalized = await _finalize(lease, outbox_id)
    if finalized is not None and on_events is not None:
        on_events()
    return finalized


def completed_payload(
    job: Job, status: str, now: datetime, refunded: Decimal = Decimal(0)
) -> dict[str, Any]:
    """The payload of a job's job.completed, built from its documented model (the one source
    of what goes on the wire); ``refunded``, the credits given back as it finished."""
    payload = JobCompletedPayload.model_validate(
        {
            "jobId": job.id,
            "jobType": job.job_type,
            "jobName": job.name,
            "jobStatus": status,
            "modifiedAt": isoformat(now),
            "creditsRefunded": number(refunded),
        }
    )
    return payload.model_dump(mode="json", by_alias=True)


async def _finalize(lease: JobLease, outbox_id: int) -> str | None:
    """Moves the job to its terminal state with its job.completed, and finishes its message;
    the status set, or None when another run had set it."""
    async with lease.holding() as session:
        job = await repo.get_job(session, lease.job_id)
        assert job is not None
        all_rejected = job.enrichment_rejected_count >= job.accepted_count
        status = (
            "Not Enriched" if job.job_type in ENRICHMENT_JOB_TYPES and all_rejected else "Finalized"
        )
        now = utcnow()
        finalized = await repo.finalize(session, job.id, status=status, now=now)
        if finalized:
            # With the transition, by the one run that made it: refunded once (P202, P204).
            refunded = await refunds.refund_enrichment(session, job, now=now)
            await webhooks.emit(
                session,
                user_id=job.user_id,
                event_type=JOB_COMPLETED,
                payloads=[completed_payload(job, status, now, refunded)],
                job_id=job.id,
            )
        await outbox.finish(session, outbox_id)
    if finalized:
        metrics.observe_job_finished(job.job_type, status, job.created_at, now)
    return status if finalized else None
