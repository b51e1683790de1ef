"""Plans as they apply to one client, the authenticated principal, and account responses."""

from __future__ import annotations

from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, Field

from dialscore.kit.envelope import number

ROLES = ("admin", "member")


@dataclass(frozen=True)
class EffectivePlan:
    """A plan's values with the client's overrides applied."""

    name: str
    api_access: bool
    lightning_scoring: bool
    core_scoring: bool
    enrichment_with_lightning: bool
    enrichment_with_core: bool
    per_second: int
    per_minute: int
    per_day: int
    webhook_rate: int
    cost_per_phone: Decimal
    cost_per_contact: Decimal
    # An enrichment job gives back the charge of each contact it found no new number for
    # (P202).
    refund_unfound: bool

    @classmethod
    def value_names(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name != "name"]

    def features(self) -> dict[str, bool]:
        return {
            "lightningScoring": self.lightning_scoring,
            "coreScoring": self.core_scoring,
            "enrichmentWithLightning": self.enrichment_with_lightning,
            "enrichmentWithCore": self.enrichment_with_core,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "plan": self.name,
            "apiAccess": self.api_access,
            **self.features(),
            "perSecond": self.per_second,
            "perMinute": self.per_minute,
            "perDay": self.per_day,
            "webhookRate": self.webhook_rate,
            "costPerPhone": number(self.cost_per_phone),
            "costPerContact": number(self.cost_per_contact),
            "refundUnfound": self.refund_unfound,
        }


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: the key's user, within its client."""

    user_id: str
    client_id: str
    role: str
    # None for a person signed in to the web app.
    key_id: str | None
    plan: EffectivePlan


class KeySpending(BaseModel):
    """Extension (P201): the calling API key's monthly credit limit and what its submissions
    spent in the current UTC calendar month."""

    monthlyCreditLimit: float | None = Field(description="Null when the key has no limit")
    spentThisMonth: float


class CreditsData(BaseModel):
    credits: float
    key: KeySpending | None = Field(
        default=None,
        description="Extension (P201): the calling API key's limit and spending this month; "
        "null for a request without an API key",
    )


class CreditsResponse(BaseModel):
    data: CreditsData


class Features(BaseModel):
    lightningScoring: bool
    coreScoring: bool
    enrichmentWithLightning: bool
    enrichmentWithCore: bool


class FeaturesData(BaseModel):
    apiAccess: bool
    features: Features


class FeaturesResponse(BaseModel):
    data: FeaturesData
