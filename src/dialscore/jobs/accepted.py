"""The answer to a submission or a rescoring: the job opened, what it cost, and the records
rejected, each as sent."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dialscore.accounts.schemas import EffectivePlan
from dialscore.jobs.schemas import ContactInput, Kind, OpenedJob
from dialscore.kit.envelope import RejectedRecord, RejectionSummary, Uuid, echoed, number


class SubmissionData(BaseModel):
    totalRecordCount: int
    acceptedRecordCount: int
    jobId: Uuid | None = Field(description="Null when no record was accepted (P1)")


class EstimateData(BaseModel):
    totalRecordCount: int
    acceptedRecordCount: int
    jobId: Uuid | None = Field(description="Always null: an estimate opens no job")
    estimate: bool = Field(description="Extension (P200): always true, this is an estimate")


class ScoringCredits(BaseModel):
    creditsCharged: float
    creditsRemaining: float
    costPerPhone: float
    phoneCount: int


class EnrichmentCredits(BaseModel):
    creditsCharged: float
    creditsRemaining: float
    costPerContact: float
    contactCount: int


class RejectedContact(RejectedRecord):
    model_config = ConfigDict(json_schema_extra=echoed(ContactInput, "contact"))


class ContactRejections(RejectionSummary[RejectedContact]):
    """The contacts a submission rejected, each as sent with its reason (D5, D6, P4, P5)."""


class ScoringResponse(BaseModel):
    data: SubmissionData
    credits: ScoringCredits
    error: ContactRejections | None


class EnrichmentResponse(BaseModel):
    data: SubmissionData
    credits: EnrichmentCredits
    error: ContactRejections | None


_KEY_LEFT = (
    "Extension (P200, P201): what the calling API key's monthly credit limit would leave this "
    "month after this charge, below zero when the submission would be refused (402); null "
    "when the key has no limit"
)


class ScoringEstimateCredits(ScoringCredits):
    keyCreditsLeftThisMonth: float | None = Field(default=None, description=_KEY_LEFT)


class EnrichmentEstimateCredits(EnrichmentCredits):
    keyCreditsLeftThisMonth: float | None = Field(default=None, description=_KEY_LEFT)


class ScoringEstimateResponse(BaseModel):
    data: EstimateData
    credits: ScoringEstimateCredits
    error: ContactRejections | None


class EnrichmentEstimateResponse(BaseModel):
    data: EstimateData
    credits: EnrichmentEstimateCredits
    error: ContactRejections | None


def present_accepted(
    kind: Kind,
    plan: EffectivePlan,
    opened: OpenedJob,
    *,
    total: int,
    accepted: int,
    rejected: list[dict[str, Any]],
) -> dict[str, Any]:
    """The answer to a submission or a rescoring, in the shape of ``ScoringResponse`` or
    ``EnrichmentResponse``."""
    credits: dict[str, Any] = {
        "creditsCharged": number(opened.charged),
        "creditsRemaining": number(opened.remaining),
    }
    if kind == "scoring":
        credits.update(costPerPhone=number(plan.cost_per_phone), phoneCount=opened.units)
    else:
        credits.update(costPerContact=number(plan.cost_per_contact), contactCount=opened.units)
    return {
        "data": {
            "totalRecordCount": total,
            "acceptedRecordCount": accepted,
            "jobId": opened.job_id,
        },
        "credits": credits,
        "error": {"rejectedRecordCount": len(rejected), "records": rejected} if rejected else None,
    }


def present_estimate(
    kind: Kind,
    plan: EffectivePlan,
    *,
    total: int,
    accepted: int,
    units: int,
    cost: Decimal,
    balance: Decimal,
    rejected: list[dict[str, Any]],
    key_left: Decimal | None = None,
) -> dict[str, Any]:
    """What a submission would answer (``present_accepted``), before anything is written or
    charged: no job, ``estimate`` true, and the balance the charge would leave, below zero
    when the credits would not cover it (P200); ``key_left``: what the calling key's monthly
    limit has left before the charge, None without a limit (P201)."""
    opened = OpenedJob(None, cost, balance - cost, units, accepted)
    answer = present_accepted(kind, plan, opened, total=total, accepted=accepted, rejected=rejected)
    answer["data"]["estimate"] = True
    answer["credits"]["keyCreditsLeftThisMonth"] = (
        None if key_left is None else number(key_left - cost)
    )
    return answer
