"""Contact input fields and the documented request and response shapes of submissions."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dialscore.scoring.numbers import PHONE_SLOTS

# Every string field of the Contact resource a client may send; anything else is kept in
# unmappedFields. Fields the service computes (ids, statuses, phones) are not inputs.
CONTACT_INPUT_FIELDS: tuple[str, ...] = (
    "firstName",
    "lastName",
    "email",
    "title",
    "companyAccount",
    "leadId",
    *PHONE_SLOTS,
    "phoneExt",
    *(f"{slot}Type" for slot in PHONE_SLOTS),
    *(f"{slot}Country" for slot in PHONE_SLOTS),
    "street",
    "city",
    "stateProvince",
    "zipPostalCode",
    "country",
    "timeZone",
    "dept",
    "level",
    "jobFunction",
    "persona",
    "website",
    "linkedInUrl",
    "companyLinkedInUrl",
    "companyCountry",
    "companyState",
    "companyCity",
    "companyZip",
    "companyAddress",
    "numberOfEmployees",
    "annualRevenue",
    "industry",
    "primarySubIndustry",
    "sicCodes",
    "naicsCodes",
    "technologies",
    "campaignListName",
    "recordOwner",
    "contactCrmId",
    "accountCrmId",
    "databaseContactId",
    "databaseCompanyId",
    "customerContactId",
    "intent",
)
KNOWN_FIELDS = frozenset(CONTACT_INPUT_FIELDS)
MAX_FIELD_LENGTH = 1000
MAX_CONTACTS = 1000
SCORING_TYPES = ("lightning", "core")


class ContactInput(BaseModel):
    """A contact as submitted. Unknown fields are kept in ``unmappedFields``."""

    model_config = ConfigDict(extra="allow")

    firstName: str | None = None
    lastName: str | None = None
    email: str | None = None
    title: str | None = None
    companyAccount: str | None = None
    phone: str | None = None
    phone2: str | None = None
    phone3: str | None = None
    phone4: str | None = None
    phone5: str | None = None
    phoneExt: str | None = None
    phoneType: str | None = Field(default=None, description="mobile, direct, hq or other")
    phone2Type: str | None = None
    phone3Type: str | None = None
    phone4Type: str | None = None
    phone5Type: str | None = None
    linkedInUrl: str | None = None
    companyLinkedInUrl: str | None = None
    website: str | None = None
    contactCrmId: str | None = None
    unmappedFields: dict[str, Any] | None = None


class SubmissionRequest(BaseModel):
    contacts: list[ContactInput] = Field(min_length=1, max_length=MAX_CONTACTS)
    scoringType: str = Field(default="lightning", description="lightning or core")
    name: str | None = Field(default=None, description="Job name; generated when absent")


class SubmissionData(BaseModel):
    totalRecordCount: int
    acceptedRecordCount: int
    jobId: str | None = Field(description="Null when no record was accepted")


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


class RejectionSummary(BaseModel):
    rejectedRecordCount: int
    records: list[dict[str, Any]] = Field(
        description="Each rejected record as submitted, plus rejectedReason"
    )


class ScoringResponse(BaseModel):
    data: SubmissionData
    credits: ScoringCredits
    error: RejectionSummary | None


class EnrichmentResponse(BaseModel):
    data: SubmissionData
    credits: EnrichmentCredits
    error: RejectionSummary | None
