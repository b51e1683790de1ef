"""Routes of /account: credits balance and plan features."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dialscore.accounts import service
from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.accounts.schemas import CreditsResponse, FeaturesResponse
from dialscore.kit.deps import ReadSession
from dialscore.kit.envelope import data, number
from dialscore.kit.errors import ERROR_RESPONSES

router = APIRouter(prefix="/account", tags=["account"], responses=ERROR_RESPONSES)


@router.get("/credits", response_model=CreditsResponse, summary="Current credit balance")
async def get_credits(principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    balance = await service.current_balance(session, principal.client_id)
    return data({"credits": number(balance)})


@router.get("/features", response_model=FeaturesResponse, summary="Features of the plan")
async def get_features(principal: CurrentPrincipal) -> dict[str, Any]:
    return data({"apiAccess": principal.plan.api_access, "features": principal.plan.features()})
