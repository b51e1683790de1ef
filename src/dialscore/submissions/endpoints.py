"""Routes of /contacts: scoring and enrichment submissions."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import StateDep, WriteSession
from dialscore.kit.errors import ERROR_RESPONSES, ErrorBody
from dialscore.kit.http import read_json_body
from dialscore.submissions import service
from dialscore.submissions.rules import Kind
from dialscore.submissions.schemas import EnrichmentResponse, ScoringResponse, SubmissionRequest

router = APIRouter(prefix="/contacts", tags=["contacts"])

_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    402: {"model": ErrorBody, "description": "The balance does not cover the charge"},
    409: {"model": ErrorBody, "description": "Idempotency-Key reused with another request"},
    413: {"model": ErrorBody, "description": "Body larger than 10 MiB"},
}
_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/SubmissionRequest"}}
        },
    }
}
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Repeat the same request with the same key within 24 hours "
        "to get the first response back without creating anything",
    ),
]


async def _submit(
    kind: Kind,
    request: Request,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    idempotency_key: str | None,
) -> JSONResponse:
    settings = state.settings
    body = await read_json_body(request, settings.max_body_bytes)
    now = utcnow()
    ttl = timedelta(hours=settings.idempotency_ttl_hours)
    try:
        response, replayed = await service.submit(
            session,
            principal=principal,
            kind=kind,
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
            session,
            principal=principal,
            key=idempotency_key,
            body_hash=service.request_hash(body),
            now=now,
            ttl=ttl,
        )
        if stored is None:
            raise
        response, replayed = stored, True
    if not replayed and response["data"]["jobId"] is not None:
        state.wake("relay")
    headers = {"Idempotent-Replayed": "true"} if replayed else None
    return JSONResponse(response, headers=headers)


@router.post(
    "/score",
    response_model=ScoringResponse,
    responses=_RESPONSES,
    openapi_extra=_BODY_DOC,
    summary="Submit up to 1000 contacts for scoring",
)
async def score_contacts(
    request: Request,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    return await _submit("scoring", request, principal, session, state, idempotency_key)


@router.post(
    "/enrich",
    response_model=EnrichmentResponse,
    responses=_RESPONSES,
    openapi_extra=_BODY_DOC,
    summary="Submit up to 1000 contacts for enrichment",
)
async def enrich_contacts(
    request: Request,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    return await _submit("enrichment", request, principal, session, state, idempotency_key)


DOCUMENTED_MODELS = [SubmissionRequest]
