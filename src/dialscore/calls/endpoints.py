"""Routes of /calls: report call outcomes, list the calls reported to a number."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from dialscore import idempotency
from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.calls import examples, service
from dialscore.calls.schemas import CallsListResponse, CallsRequest, CallsResponse, present_call
from dialscore.idempotency import IdempotencyKey, Once
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.http import StrictJsonRoute
from dialscore.kit.openapi import api_responses, request_example
from dialscore.kit.pagination import LimitQuery, PageQuery, PageRequest

router = APIRouter(prefix="/calls", tags=["calls"], route_class=StrictJsonRoute)

# A key first used for a submission is another key here (P76).
IDEMPOTENCY_SCOPE = "calls"


@router.post(
    "",
    response_model=CallsResponse,
    responses=api_responses(
        400,
        409,
        413,
        example=examples.REPORT_ANSWER,
        e409="The Idempotency-Key was used with another request",
    ),
    openapi_extra=request_example(examples.REPORT_REQUEST),
    summary="Report the outcomes of up to 1000 calls",
)
async def report_calls(
    body: CallsRequest,
    request: Request,
    response: Response,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """What happened when your dialer called numbers: the evidence later scores of those
    numbers weigh (docs/scoring.md). Free of charge. Each call is checked alone: a bad one is
    rejected with its reason, the others are kept (P32)."""
    now = utcnow()
    once = None
    if idempotency_key is not None:
        fingerprint = idempotency.request_hash(await request.json(), IDEMPOTENCY_SCOPE)
        ttl = state.settings.idempotency_ttl
        once = Once(principal.user_id, IDEMPOTENCY_SCOPE, idempotency_key, fingerprint, ttl)

    async def answer() -> dict[str, Any]:
        report = await service.record_calls(session, principal=principal, calls=body.calls, now=now)
        rejected = report.rejected
        return {
            "data": {"totalRecordCount": report.total, "acceptedRecordCount": report.accepted},
            "error": {"rejectedRecordCount": len(rejected), "records": rejected}
            if rejected
            else None,
        }

    answered, replayed = await idempotency.answer_once(session, once, now=now, answer=answer)
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return answered


@router.get(
    "",
    response_model=CallsListResponse,
    responses=api_responses(400, example=examples.LIST_ANSWER),
    summary="List the calls the client reported to one number, newest first",
)
async def list_calls(
    principal: CurrentPrincipal,
    session: ReadSession,
    number: Annotated[
        str, Query(description="The number; without '+' it is read in `country` (default US)")
    ],
    country: Annotated[
        str | None, Query(description="ISO alpha-2 country of a number without '+'")
    ] = None,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
) -> dict[str, Any]:
    """The calls any user of the client reported to the number, a page at a time."""
    request = PageRequest(page, limit)
    calls, total = await service.list_calls(
        session, principal, number=number, country=country, page=request
    )
    listed = {"calls": [present_call(c) for c in calls], "pagination": request.describe(total)}
    return {"data": listed}
