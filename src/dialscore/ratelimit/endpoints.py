"""GET /api/public/quota: the caller's three tiers, without counting the call (D25)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.kit.openapi import api_responses
from dialscore.ratelimit.schemas import QuotaResponse, present_quota
from dialscore.ratelimit.service import plan_limits, unconsumed
from dialscore.ratelimit.windows import Decision

router = APIRouter(prefix="/api/public", tags=["rate limits"])


@router.get(
    "/quota",
    response_model=QuotaResponse,
    responses=api_responses(),
    summary="The caller's request rate limits; this call consumes nothing",
)
async def get_quota(principal: CurrentPrincipal, request: Request) -> dict[str, Any]:
    decision: Decision | None = getattr(request.state, "rate_limit", None)
    if decision is None:  # the limiter is switched off: nothing is counted
        decision = unconsumed(plan_limits(principal.plan))
    return {"data": present_quota(decision)}
