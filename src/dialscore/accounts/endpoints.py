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
    responses=api_responses(
        example={
            "data": {"credits": 998.9, "key": {"monthlyCreditLimit": 500, "spentThisMonth": 1.1}}
        }
    ),
    summary="Current credit balance",
)
async def get_credits(principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    """The client's balance, shared by all its users: what submissions are charged from
    (D9), exact to 1/10,000 of a credit (P15). Extension (P201): `key` gives the calling
    key's monthly credit limit (null: none) and what its submissions spent this UTC month."""
    balance = await service.current_balance(session, principal.client_id)
    data: dict[str, Any] = {"credits": number(balance), "key": None}
    if principal.key_id is not None:
        limit, spent = await service.key_spending(session, principal.key_id)
        data["key"] = {
            "monthlyCreditLimit": None if limit is None else number(limit),
            "spentThisMonth": number(spent),
        }
    return {"data": data}


@router.get(
    "/features",
    response_model=FeaturesResponse,
    responses=api_responses(
        example={
            "data": {
                "apiAccess": True,
                "features": {
                    "lightningScoring": True,
                    "coreScoring": False,
                    "enrichmentWithLightning": True,
                    "enrichmentWithCore": False,
                },
            }
        }
    ),
    summary="Features of the plan",
)
async def get_features(principal: CurrentPrincipal) -> dict[str, Any]:
    """What the client's plan allows (D3): `core` scoring, enrichment with each scoring
    type. A submission asking for a feature the plan lacks answers 403."""
    plan = principal.plan
    return {"data": {"apiAccess": plan.api_access, "features": plan.features()}}
