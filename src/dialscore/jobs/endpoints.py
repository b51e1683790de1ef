"""Routes of /jobs: list jobs, read one, read its contacts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.jobs import service
from dialscore.jobs.schemas import (
    ContactsResponse,
    JobResponse,
    JobsResponse,
    present_contact,
    present_job,
)
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.envelope import data
from dialscore.kit.errors import ERROR_RESPONSES, BadRequest, ErrorBody
from dialscore.kit.http import read_json_body
from dialscore.kit.pagination import MAX_PAGE, PageRequest
from dialscore.submissions import service as submissions
from dialscore.submissions.schemas import ScoringResponse

router = APIRouter(prefix="/jobs", tags=["jobs"], responses=ERROR_RESPONSES)

# The upper bound keeps the row offset within a 64-bit integer on both databases.
PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page number, from 1")]
LimitQuery = Annotated[int, Query(ge=1, le=1000, description="Items per page, 1 to 1000")]


@router.get("", response_model=JobsResponse, summary="List the user's jobs, newest first")
async def list_jobs(
    principal: CurrentPrincipal,
    session: ReadSession,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
    source: Annotated[Literal["app", "api", "all"], Query(description="Job source")] = "all",
) -> dict[str, Any]:
    request = PageRequest(page, limit)
    jobs, total = await service.list_jobs(session, principal, source=source, page=request)
    return data({"jobs": [present_job(j) for j in jobs], "pagination": request.describe(total)})


@router.get("/{jobId}", response_model=JobResponse, summary="Read one job")
async def get_job(jobId: str, principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    return data(present_job(await service.job_of(session, principal, jobId)))


@router.get(
    "/{jobId}/contacts", response_model=ContactsResponse, summary="Read the contacts of a job"
)
async def get_job_contacts(
    jobId: str,
    principal: CurrentPrincipal,
    session: ReadSession,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
) -> JSONResponse:
    request = PageRequest(page, limit)
    contacts, total = await service.job_contacts(session, principal, jobId, request)
    # Returned as is: up to 1000 contacts need no second validation against the model.
    return JSONResponse(
        data(
            {
                "contacts": [present_contact(c) for c in contacts],
                "pagination": request.describe(total),
            }
        )
    )


@router.post(
    "/{jobId}/rescore",
    response_model=ScoringResponse,
    summary="Score a finished job's contacts again with today's evidence, as a new job",
    responses={
        402: {"model": ErrorBody, "description": "The balance does not cover the charge"},
        409: {"model": ErrorBody, "description": "The job has not finished"},
    },
)
async def rescore_job(
    jobId: str,
    request: Request,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
) -> dict[str, Any]:
    body: Any = {}
    if await request.body():
        body = await read_json_body(request, state.settings.max_body_bytes)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    response = await submissions.rescore(
        session,
        principal=principal,
        job_id=jobId,
        now=utcnow(),
        name=submissions.parse_name(body),
    )
    await session.commit()
    state.wake("relay")
    return response
