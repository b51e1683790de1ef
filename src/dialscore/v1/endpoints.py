"""Routes of the deprecated version 1 interface: submissions and job reads under /api."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.jobs import service as jobs
from dialscore.jobs.endpoints import LimitQuery, PageQuery
from dialscore.jobs.schemas import JobResponse, JobsResponse, present_job
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.envelope import data
from dialscore.kit.errors import ERROR_RESPONSES, ErrorBody
from dialscore.kit.http import read_json_body
from dialscore.kit.pagination import PageRequest
from dialscore.submissions.rules import Kind
from dialscore.v1 import service
from dialscore.v1.schemas import (
    V1EnrichRequest,
    V1EnrichResponse,
    V1ScoreRequest,
    V1ScoreResponse,
)

router = APIRouter(tags=["version 1 (deprecated)"], deprecated=True, responses=ERROR_RESPONSES)

_SUBMISSION_RESPONSES: dict[int | str, dict[str, Any]] = {
    402: {"model": ErrorBody, "description": "The balance does not cover the charge"},
    413: {"model": ErrorBody, "description": "Body larger than 10 MiB"},
}


def _body_doc(model: str) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}},
        }
    }


async def _submit(
    kind: Kind,
    request: Request,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
) -> JSONResponse:
    settings = state.settings
    body = await read_json_body(request, settings.max_body_bytes)
    response = await service.submit(
        session,
        principal=principal,
        kind=kind,
        body=body,
        now=utcnow(),
        server_secret=settings.resolved_secret_key,
        allow_private=settings.webhook_allow_private,
    )
    await session.commit()
    if response["data"]["jobId"] is not None:
        state.wake("relay")
    return JSONResponse(response)


@router.post(
    "/contacts/score",
    response_model=V1ScoreResponse,
    responses=_SUBMISSION_RESPONSES,
    openapi_extra=_body_doc("V1ScoreRequest"),
    summary="Version 1: submit up to 1000 contacts for scoring "
    "(use POST /api/public/v2/contacts/score)",
)
async def score_contacts(
    request: Request, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> JSONResponse:
    return await _submit("scoring", request, principal, session, state)


@router.post(
    "/contacts/enrich",
    response_model=V1EnrichResponse,
    responses=_SUBMISSION_RESPONSES,
    openapi_extra=_body_doc("V1EnrichRequest"),
    summary="Version 1: submit up to 1000 contacts for enrichment "
    "(use POST /api/public/v2/contacts/enrich)",
)
async def enrich_contacts(
    request: Request, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> JSONResponse:
    return await _submit("enrichment", request, principal, session, state)


@router.get(
    "/jobs",
    response_model=JobsResponse,
    summary="Version 1: list the user's jobs, newest first (use GET /api/public/v2/jobs)",
)
async def list_jobs(
    principal: CurrentPrincipal,
    session: ReadSession,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
    source: Annotated[Literal["app", "api", "all"], Query(description="Job source")] = "all",
) -> dict[str, Any]:
    request = PageRequest(page, limit)
    found, total = await jobs.list_jobs(session, principal, source=source, page=request)
    return data({"jobs": [present_job(j) for j in found], "pagination": request.describe(total)})


@router.get(
    "/jobs/{id}",
    response_model=JobResponse,
    summary="Version 1: read one job (use GET /api/public/v2/jobs/{jobId})",
)
async def get_job(id: str, principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    return data(present_job(await jobs.job_of(session, principal, id)))


DOCUMENTED_MODELS = [V1ScoreRequest, V1EnrichRequest]
