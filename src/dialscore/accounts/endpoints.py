"""Routes of /account: credits balance and plan features."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dialscore.accounts import service
from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accounts.schemas import CreditsResponse, FeaturesResponse
from dialscore.kit.deps import ReadSession
from dialscore.kit.envelope import number
from dialscore.kit.openapi import api_responses

router = APIRouter(prefix="/account", tags=["account"])


@router.get(
    "/credits",
    response_model=CreditsResponse,
    responses=api_responses(),
    summary="Current credit balance",
)
async def get_credits(principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    balance = await service.current_balance(session, principal.client_id)
    return {"data": {"credits": number(balance)}}


@router.get(
    "/features",
    response_model=FeaturesResponse,
    responses=api_responses(),
    summary="Features of the plan",
)
async def get_features(principal: CurrentPrincipal) -> dict[str, Any]:
    plan = principal.plan
    return {"data": {"apiAccess": plan.api_access, "features": plan.features()}}
