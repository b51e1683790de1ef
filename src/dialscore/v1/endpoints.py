"""Routes of the deprecated version 1 interface: submissions and job reads under /api."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accounts.schemas import Principal
from dialscore.jobs import examples as jobs_examples
from dialscore.jobs import service as jobs
from dialscore.jobs.accepted import present_accepted
from dialscore.jobs.schemas import JobResponse, JobsResponse, Kind, SourceQuery, present_job
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import AppState, ReadSession, StateDep, WriteSession
from dialscore.kit.envelope import Uuid
from dialscore.kit.http import StrictJsonRoute
from dialscore.kit.openapi import api_responses, request_example
from dialscore.kit.pagination import LimitQuery, PageQuery, PageRequest
from dialscore.v1 import examples, service
from dialscore.v1.schemas import (
    V1EnrichRequest,
    V1EnrichResponse,
    V1ScoreRequest,
    V1ScoreResponse,
)

router = APIRouter(tags=["version 1 (deprecated)"], deprecated=True, route_class=StrictJsonRoute)


async def _submit(
    kind: Kind,
    body: V1ScoreRequest | V1EnrichRequest,
    principal: Principal,
    session: AsyncSession,
    state: AppState,
) -> dict[str, Any]:
    settings = state.settings
    submission = await service.submit(
        session,
        principal=principal,
        kind=kind,
        contacts=body.contacts,
        name=body.name,
        now=utcnow(),
        server_secret=settings.resolved_secret_key,
        allow_private=settings.webhook_allow_private,
    )
    await session.commit()
    if submission.opened.job_id is not None:
        state.wakers.wake("relay")
    answer = present_accepted(
        kind,
        principal.plan,
        submission.opened,
        total=submission.total,
        accepted=submission.accepted,
        rejected=submission.rejected,
    )
    answer["data"]["duplicateCount"] = submission.duplicates
    return answer


@router.post(
    "/contacts/score",
    operation_id="v1_score_contacts",
    response_model=V1ScoreResponse,
    responses=api_responses(400, 402, 413, example=examples.SCORE_ANSWER),
    openapi_extra=request_example(examples.SCORE_REQUEST),
    summary="Version 1: submit up to 1000 contacts for scoring "
    "(use POST /api/public/v2/contacts/score)",
)
async def score_contacts(
    body: V1ScoreRequest, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """Deprecated. Opens a `scoring` job (lightning) on the version 2 services (P40, P41).
    A repeat of an earlier contact is counted in `duplicateCount`, not rejected (P42). A
    contact's `callbackUrl` receives it once scored, in the version 1 flat shape, signed with
    the user's callback secret (D27, P46)."""
    return await _submit("scoring", body, principal, session, state)


@router.post(
    "/contacts/enrich",
    operation_id="v1_enrich_contacts",
    response_model=V1EnrichResponse,
    responses=api_responses(400, 402, 413, example=examples.ENRICH_ANSWER),
    openapi_extra=request_example(examples.ENRICH_REQUEST),
    summary="Version 1: submit up to 1000 contacts for enrichment "
    "(use POST /api/public/v2/contacts/enrich)",
)
async def enrich_contacts(
    body: V1EnrichRequest, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """Deprecated. Opens an `enrichment` job (lightning). Company fields may be nested
    under `companyInfo` (P44)."""
    return await _submit("enrichment", body, principal, session, state)


@router.get(
    "/jobs",
    operation_id="v1_list_jobs",
    response_model=JobsResponse,
    responses=api_responses(400, example=jobs_examples.JOBS_ANSWER),
    summary="Version 1: list the user's jobs, newest first (use GET /api/public/v2/jobs)",
)
async def list_jobs(
    principal: CurrentPrincipal,
    session: ReadSession,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
    source: SourceQuery = "all",
) -> dict[str, Any]:
    """Deprecated. The version 2 answer, jobs of both versions (P49)."""
    request = PageRequest(page, limit)
    found, total = await jobs.list_jobs(session, principal, source=source, page=request)
    return {
        "data": {"jobs": [present_job(j) for j in found], "pagination": request.describe(total)}
    }


@router.get(
    "/jobs/{id}",
    operation_id="v1_get_job",
    response_model=JobResponse,
    responses=api_responses(400, 404, example=jobs_examples.JOB_ANSWER),
    summary="Version 1: read one job (use GET /api/public/v2/jobs/{jobId})",
)
async def get_job(id: Uuid, principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    """Deprecated. The version 2 answer (P49); read the job's contacts with
    `GET /api/public/v2/jobs/{jobId}/contacts`."""
    return {"data": present_job(await jobs.job_of(session, principal, id))}
