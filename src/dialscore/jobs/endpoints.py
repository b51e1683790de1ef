"""Routes of /jobs: list jobs, read one, read its contacts, score one again, erase one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response
from pydantic import BaseModel, TypeAdapter

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.jobs import callability, examples, service
from dialscore.jobs.accepted import ScoringResponse, present_accepted
from dialscore.jobs.schemas import (
    ContactsResponse,
    JobName,
    JobResponse,
    JobsResponse,
    SourceQuery,
    present_contact,
    present_job,
)
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.envelope import Uuid
from dialscore.kit.http import StrictJsonRoute
from dialscore.kit.openapi import api_responses, request_example
from dialscore.kit.pagination import LimitQuery, PageQuery, PageRequest

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=StrictJsonRoute)


@router.get(
    "",
    response_model=JobsResponse,
    responses=api_responses(400, example=examples.JOBS_ANSWER),
    summary="List the user's jobs, newest first",
)
async def list_jobs(
    principal: CurrentPrincipal,
    session: ReadSession,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
    source: SourceQuery = "all",
) -> dict[str, Any]:
    """The jobs of the key's user, from the API (`api`), the web app (`app`) or both
    (`all`), a page at a time (D14)."""
    request = PageRequest(page, limit)
    jobs, total = await service.list_jobs(session, principal, source=source, page=request)
    page_of_jobs = {"jobs": [present_job(j) for j in jobs], "pagination": request.describe(total)}
    return {"data": page_of_jobs}


@router.get(
    "/{jobId}",
    response_model=JobResponse,
    responses=api_responses(400, 404, example=examples.JOB_ANSWER),
    summary="Read one job",
)
async def get_job(jobId: Uuid, principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    """A job of the key's user: its status (`Init`, `Processing`, then `Finalized` or
    `Not Enriched`, D12) and its counts. Poll it until the status is terminal, or listen
    for `job.completed`. Another user's job answers 404 (D1)."""
    return {"data": present_job(await service.job_of(session, principal, jobId))}


@router.delete(
    "/{jobId}",
    status_code=204,
    response_class=Response,
    responses=api_responses(400, 404),
    summary="Erase a job: its contacts, their results and its deliveries' bodies",
)
async def delete_job(jobId: Uuid, principal: CurrentPrincipal, session: WriteSession) -> None:
    """Extension (P132, P133): erases a job of the key's user at once and for good, with its
    contacts and their results, the rows of its file it left out, and the bodies of its
    webhook deliveries; its deliveries not yet sent are cancelled and never go out (their
    log entries stay, without bodies). A job still running is stopped. The calls reported
    for its contacts stay, with their `contactId`, which no longer finds a contact; its
    charge stays in the credit ledger, with the job's id, and is not refunded. Answers 204
    with no body; the job then answers 404 everywhere, as does another user's job (D1)."""
    await service.erase_job(session, principal, jobId, now=utcnow())
    await session.commit()


# Validating a page of 1000 contacts against ContactsResponse took 3 to 4 times as long as
# presenting and dumping it (bench/contacts_response.py): a page is dumped as presented, and
# the contract test (tests/test_contract.py) checks that it keeps to the model.
_PAGE_JSON = TypeAdapter(dict[str, Any])


@router.get(
    "/{jobId}/contacts",
    response_model=ContactsResponse,
    responses=api_responses(400, 404, example=examples.CONTACTS_ANSWER),
    summary="Read the contacts of a job",
)
async def get_job_contacts(
    jobId: Uuid,
    principal: CurrentPrincipal,
    session: ReadSession,
    state: StateDep,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
) -> Response:
    """The accepted contacts of a job, in the order submitted, with their phones scored
    as far as the job has got (a contact not scored yet is `Uncontacted`). The same contact
    shape as the `job.contact.scored` event: use it to backfill a missed delivery. Each
    phone's call verdict (`callableNow`, `nextCallableAt` …) is as of this request (P177)."""
    request = PageRequest(page, limit)
    contacts, total = await service.job_contacts(state.db, session, principal, jobId, request)
    presented = await callability.present_with_verdicts(
        session,
        client_id=principal.client_id,
        presented=[present_contact(c) for c in contacts],
        rules=callability.rules_in_force(state.settings.compliance_rules),
    )
    body = {
        "data": {
            "contacts": presented,
            "pagination": request.describe(total),
        }
    }
    return Response(_PAGE_JSON.dump_json(body), media_type="application/json")


class RescoreRequest(BaseModel):
    name: JobName | None = None


@router.post(
    "/{jobId}/rescore",
    response_model=ScoringResponse,
    responses=api_responses(
        400, 402, 404, 409, 413, example=examples.RESCORE_ANSWER, e409="The job has not finished"
    ),
    openapi_extra=request_example(examples.RESCORE_REQUEST),
    summary="Score a finished job's contacts again with today's evidence, as a new job",
)
async def rescore_job(
    jobId: Uuid,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    body: Annotated[RescoreRequest | None, Body()] = None,
) -> dict[str, Any]:
    """Opens a `rescoring` job with the scored contacts of a finished job, numbers found by
    enrichment included, so that call outcomes reported since are taken into account (P33).
    Charged like a scoring submission; the body is optional."""
    opened = await service.rescore(
        session,
        principal=principal,
        job_id=jobId,
        now=utcnow(),
        name=body.name if body is not None else None,
    )
    await session.commit()
    state.wakers.wake("relay")
    return present_accepted(
        "scoring",
        principal.plan,
        opened,
        total=opened.contacts,
        accepted=opened.contacts,
        rejected=[],
    )
