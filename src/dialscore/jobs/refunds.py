"""What a finished enrichment job gives back: the charge of each contact for which enrichment
found no new number, when the client's plan says so (P202), and of each whose numbers came
through the client's own provider keys (P204)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import service as accounts
from dialscore.jobs import repository as repo
from dialscore.jobs.schemas import ENRICHMENT_JOB_TYPES
from dialscore.models import Job

REFUND_REASON = "enrichment refund"
OWN_KEY_REASON = "found with your own provider key"


async def refund_enrichment(session: AsyncSession, job: Job, *, now: datetime) -> Decimal:
    """Refunds what an enrichment job's contacts did not cost: those enrichment found no new
    number for (rejected; P202), when the client's plan (as it is now) refunds them, and
    those whose new numbers all came through the client's own provider keys (P204), always.
    Each is a ledger row of its own, at the price each contact was charged at submission;
    the credits refunded, also kept on the job.

    Called in the transaction that moves the job to its terminal state, and only by the run
    whose ``finalize`` did it: a job is refunded once, whatever crashes or redeliveries."""
    if job.job_type not in ENRICHMENT_JOB_TYPES:
        return Decimal(0)
    refunded = Decimal(0)
    unfound = job.enrichment_rejected_count
    if unfound > 0:
        plan = await accounts.client_plan(session, client_id=job.client_id)
        if plan.refund_unfound:
            refunded += await _refund(session, job, unfound, REFUND_REASON, now)
    own_key = await repo.count_found_with_own_keys(session, job.id)
    if own_key > 0:
        refunded += await _refund(session, job, own_key, OWN_KEY_REASON, now)
    if refunded:
        await repo.set_credits_refunded(session, job.id, refunded)
    return refunded


async def _refund(
    session: AsyncSession, job: Job, units: int, reason: str, now: datetime
) -> Decimal:
    return await accounts.refund(
        session,
        client_id=job.client_id,
        job_id=job.id,
        units=units,
        of=job.accepted_count,
        reason=reason,
        now=now,
    )
