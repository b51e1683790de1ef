"""The quota response."""

from __future__ import annotations

from pydantic import BaseModel

from dialscore.ratelimit.windows import Decision


class TierQuota(BaseModel):
    limit: int
    remaining: int
    reset: int


class QuotaData(BaseModel):
    second: TierQuota
    minute: TierQuota
    day: TierQuota


class QuotaResponse(BaseModel):
    data: QuotaData


def present_quota(decision: Decision) -> dict[str, dict[str, int]]:
    return {
        state.tier: {"limit": state.limit, "remaining": state.remaining, "reset": state.reset}
        for state in decision.states
    }
