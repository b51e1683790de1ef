"""Job use cases: reading jobs and their contacts, and scheduling their processing."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.jobs import repository as repo
from dialscore.kit.clock import require_uuid
from dialscore.kit.errors import NotFound
from dialscore.kit.pagination import PageRequest
from dialscore.models import Contact, Job
from dialscore.worker import outbox

PROCESS_JOB = "process_job"


async def job_of(session: AsyncSession, principal: Principal, job_id: str) -> Job:
    """The principal's own job; 400 for a malformed id, 404 for anyone else's (D1)."""
    job = await repo.get_job_of_user(session, require_uuid(job_id, "jobId"), principal.user_id)
    if job is None:
        raise NotFound("job not found")
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
    session: AsyncSession, principal: Principal, job_id: str, page: PageRequest
) -> tuple[Sequence[Contact], int]:
    job = await job_of(session, principal, job_id)
    contacts = await repo.list_contacts(
        session, job_id=job.id, offset=page.offset, limit=page.limit
    )
    return contacts, job.accepted_count


def schedule_processing(session: AsyncSession, job_id: str) -> None:
    outbox.enqueue(session, PROCESS_JOB, {"job_id": job_id})
