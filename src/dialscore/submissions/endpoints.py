"""Routes of /contacts: scoring and enrichment submissions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore import idempotency
from dialscore.accounts import service as accounts
from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accounts.schemas import Principal
from dialscore.idempotency import IdempotencyKey, Once
from dialscore.jobs import examples
from dialscore.jobs import service as jobs
from dialscore.jobs.accepted import (
    EnrichmentEstimateResponse,
    EnrichmentResponse,
    ScoringEstimateResponse,
    ScoringResponse,
    present_accepted,
    present_estimate,
)
from dialscore.jobs.schemas import Kind
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import AppState, ReadSession, StateDep, WriteSession
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


async def _estimate(
    kind: Kind, body: SubmissionRequest, principal: Principal, session: AsyncSession
) -> dict[str, Any]:
    scoring_type = body.scoringType or "lightning"
    jobs.require_feature(principal.plan, kind, scoring_type)
    found = service.estimate(principal.plan, kind, body.contacts)
    balance = await accounts.current_balance(session, principal.client_id)
    key_left = None
    if principal.key_id is not None:
        limit, spent = await accounts.key_spending(session, principal.key_id)
        if limit is not None:
            key_left = limit - spent
    return present_estimate(
        kind,
        principal.plan,
        total=found.total,
        accepted=found.accepted,
        units=found.units,
        cost=found.cost,
        balance=balance,
        rejected=found.records,
        key_left=key_left,
    )


_ESTIMATE_DOC = """Extension (P200): takes exactly the body of `POST /contacts/{kind}` and
    answers what that submission would answer now (the records accepted and rejected, each
    rejected one as sent with its reason, the credits it would charge and the balance it
    would leave), with `data.jobId` null and `data.estimate` true. Nothing is created or
    charged, so it never answers 402: a charge the balance would not cover gives a negative
    `creditsRemaining`, one the calling key's monthly credit limit would not allow a negative
    `keyCreditsLeftThisMonth`. A plan without the feature gets the submission's 403. The web app's
    upload shows the same figures before its job starts."""


@router.post(
    "/score/estimate",
    response_model=ScoringEstimateResponse,
    responses=api_responses(400, 413, example=examples.SCORE_ESTIMATE),
    openapi_extra=request_example(examples.SCORE_REQUEST),
    summary="What scoring these contacts would accept, reject and charge, without doing it",
    description=_ESTIMATE_DOC.replace("{kind}", "score"),
)
async def estimate_scoring(
    body: SubmissionRequest, principal: CurrentPrincipal, session: ReadSession
) -> dict[str, Any]:
    return await _estimate("scoring", body, principal, session)


@router.post(
    "/enrich/estimate",
    response_model=EnrichmentEstimateResponse,
    responses=api_responses(400, 413, example=examples.ENRICH_ESTIMATE),
    openapi_extra=request_example(examples.ENRICH_REQUEST),
    summary="What enriching these contacts would accept, reject and charge, without doing it",
    description=_ESTIMATE_DOC.replace("{kind}", "enrich"),
)
async def estimate_enrichment(
    body: SubmissionRequest, principal: CurrentPrincipal, session: ReadSession
) -> dict[str, Any]:
    return await _estimate("enrichment", body, principal, session)
