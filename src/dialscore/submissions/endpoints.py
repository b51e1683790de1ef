"""Routes of /contacts: scoring and enrichment submissions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore import idempotency
from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accounts.schemas import Principal
from dialscore.idempotency import IdempotencyKey, Once
from dialscore.jobs import examples
from dialscore.jobs.accepted import EnrichmentResponse, ScoringResponse, present_accepted
from dialscore.jobs.schemas import Kind
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import AppState, StateDep, WriteSession
from dialscore.kit.http import StrictJsonRoute
from dialscore.kit.openapi import api_responses, request_example
from dialscore.submissions import service
from dialscore.submissions.schemas import SubmissionRequest

router = APIRouter(prefix="/contacts", tags=["contacts"], route_class=StrictJsonRoute)

_ERRORS = (400, 402, 409, 413)
_E409 = "The Idempotency-Key was used with another request"


async def _submit(
    kind: Kind,
    body: SubmissionRequest,
    request: Request,
    response: Response,
    principal: Principal,
    session: AsyncSession,
    state: AppState,
    key: str | None,
) -> dict[str, Any]:
    now = utcnow()
    once = None
    if key is not None:
        # Scoped to the operation (P76): a key first used to score is another key here.
        scope = "contacts/score" if kind == "scoring" else "contacts/enrich"
        fingerprint = idempotency.request_hash(await request.json(), scope)
        once = Once(principal.user_id, scope, key, fingerprint, state.settings.idempotency_ttl)

    async def answer() -> dict[str, Any]:
        submission = await service.submit(
            session,
            principal=principal,
            kind=kind,
            contacts=body.contacts,
            scoring_type=body.scoringType or "lightning",
            name=body.name,
            now=now,
        )
        return present_accepted(
            kind,
            principal.plan,
            submission.opened,
            total=submission.total,
            accepted=submission.accepted,
            rejected=submission.rejected,
        )

    answered, replayed = await idempotency.answer_once(session, once, now=now, answer=answer)
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    elif answered["data"]["jobId"] is not None:
        state.wakers.wake("relay")
    return answered


@router.post(
    "/score",
    response_model=ScoringResponse,
    responses=api_responses(*_ERRORS, example=examples.SCORE_ANSWER, e409=_E409),
    openapi_extra=request_example(examples.SCORE_REQUEST),
    summary="Submit up to 1000 contacts for scoring",
)
async def score_contacts(
    body: SubmissionRequest,
    request: Request,
    response: Response,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """Opens a scoring job with the contacts that pass the rules and charges
    `costPerPhone` for each valid, distinct number among them (D9). The answer comes at once,
    with the job's id and what was rejected, each record as sent with its reason; the scores
    come later, one `job.contact.scored` event per contact, or from
    `GET /jobs/{jobId}/contacts`. `lightning` (the default) or `core` scoring (D8). Repeat
    the request with the same `Idempotency-Key` to get the first answer back (D10)."""
    return await _submit(
        "scoring", body, request, response, principal, session, state, idempotency_key
    )


@router.post(
    "/enrich",
    response_model=EnrichmentResponse,
    responses=api_responses(*_ERRORS, example=examples.ENRICH_ANSWER, e409=_E409),
    openapi_extra=request_example(examples.ENRICH_REQUEST),
    summary="Submit up to 1000 contacts for enrichment",
)
async def enrich_contacts(
    body: SubmissionRequest,
    request: Request,
    response: Response,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """Opens an enrichment job: each accepted contact is looked up for further data and
    phone numbers, which are then scored with its own (`enrich_and_score`, or
    `enrich_and_core` with `scoringType` `core`). Charges `costPerContact` per accepted
    contact (D9). A contact needs a company, a LinkedIn URL or a company LinkedIn URL, and a
    name, LinkedIn URL or email (D6). Results arrive like scoring's."""
    return await _submit(
        "enrichment", body, request, response, principal, session, state, idempotency_key
    )
