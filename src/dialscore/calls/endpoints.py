"""Routes of /calls: report call outcomes, list the calls reported to a number."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.calls import service
from dialscore.calls.schemas import CallsListResponse, CallsRequest, CallsResponse, present_call
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.envelope import data
from dialscore.kit.errors import ERROR_RESPONSES, ErrorBody
from dialscore.kit.http import read_json_body
from dialscore.kit.pagination import MAX_PAGE, PageRequest

router = APIRouter(prefix="/calls", tags=["calls"], responses=ERROR_RESPONSES)

_POST_RESPONSES: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "Idempotency-Key reused with another request"},
    413: {"model": ErrorBody, "description": "Body larger than 10 MiB"},
}
_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallsRequest"}}},
    }
}
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Repeat the same report with the same key within 24 hours "
        "to get the first response back without storing the calls again",
    ),
]
# The upper bound keeps the row offset within a 64-bit integer on both databases.
PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page number, from 1")]
LimitQuery = Annotated[int, Query(ge=1, le=1000, description="Items per page, 1 to 1000")]


@router.post(
    "",
    response_model=CallsResponse,
    responses=_POST_RESPONSES,
    openapi_extra=_BODY_DOC,
    summary="Report the outcomes of up to 1000 calls",
)
async def report_calls(
    request: Request,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    settings = state.settings
    body = await read_json_body(request, settings.max_body_bytes)
    now = utcnow()
    ttl = timedelta(hours=settings.idempotency_ttl_hours)
    try:
        response, replayed = await service.record_calls(
            session,
            principal=principal,
            body=body,
            now=now,
            idempotency_key=idempotency_key,
            idempotency_ttl=ttl,
        )
        await session.commit()
    except IntegrityError:
        # A concurrent request with the same Idempotency-Key committed first.
        await session.rollback()
        if idempotency_key is None:
            raise
        stored = await service.replay(
            session, principal=principal, key=idempotency_key, body=body, now=now, ttl=ttl
        )
        if stored is None:
            raise
        response, replayed = stored, True
    headers = {"Idempotent-Replayed": "true"} if replayed else None
    return JSONResponse(response, headers=headers)


@router.get(
    "",
    response_model=CallsListResponse,
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
    request = PageRequest(page, limit)
    calls, total = await service.list_calls(
        session, principal, number=number, country=country, page=request
    )
    return data({"calls": [present_call(c) for c in calls], "pagination": request.describe(total)})


DOCUMENTED_MODELS = [CallsRequest]
