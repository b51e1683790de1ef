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
    responses=api_responses(
        example={
            "data": {
                "second": {"limit": 10, "remaining": 10, "reset": 1748961001},
                "minute": {"limit": 600, "remaining": 587, "reset": 1748961060},
                "day": {"limit": 25000, "remaining": 24112, "reset": 1749000000},
            }
        }
    ),
    summary="The caller's request rate limits; this call consumes nothing",
)
async def get_quota(principal: CurrentPrincipal, request: Request) -> dict[str, Any]:
    """The client's three request tiers: limit, what is left and when each window resets
    (Unix seconds). The call counts against none of them and is answered even while a tier
    is used up (P25)."""
    decision: Decision | None = getattr(request.state, "rate_limit", None)
    if decision is None:  # the limiter is switched off: nothing is counted
        decision = unconsumed(plan_limits(principal.plan))
    return {"data": present_quota(decision)}
