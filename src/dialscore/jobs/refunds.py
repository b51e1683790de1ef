"""What a finished enrichment job gives back (P202): the charge of each contact for which
enrichment found no new number, when the client's plan says so."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts import service as accounts
from dialscore.jobs import repository as repo
from dialscore.jobs.schemas import ENRICHMENT_JOB_TYPES
from dialscore.models import Job

REFUND_REASON = "enrichment refund"


async def refund_unfound(session: AsyncSession, job: Job, *, now: datetime) -> Decimal:
    """Refunds the contacts of an enrichment job that enrichment found no new number for
    (those it rejected), at the price each was charged at submission, when the client's plan
    (as it is now) refunds them; the credits refunded, also kept on the job.

    Called in the transaction that moves the job to its terminal state, and only by the run
    whose ``finalize`` did it: a job is refunded once, whatever crashes or redeliveries."""
    unfound = job.enrichment_rejected_count
    if job.job_type not in ENRICHMENT_JOB_TYPES or unfound <= 0:
        return Decimal(0)
    plan = await accounts.client_plan(session, client_id=job.client_id)
    if not plan.refund_unfound:
        return Decimal(0)
    refunded = await accounts.refund(
        session,
        client_id=job.client_id,
        job_id=job.id,
        units=unfound,
        of=job.accepted_count,
        reason=REFUND_REASON,
        now=now,
    )
    if refunded:
        await repo.set_credits_refunded(session, job.id, refunded)
    return refunded
