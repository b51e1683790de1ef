"""Version 1 shapes: the request and response models of the version 1 routes."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from dialscore.jobs.accepted import EnrichmentCredits, ScoringCredits
from dialscore.jobs.schemas import MAX_CONTACTS, ContactInput, JobName
from dialscore.kit.envelope import (
    NotNull,
    RejectedRecord,
    RejectionSummary,
    Uuid,
    echoed,
    elements_of,
)

# Company fields an enrichment contact may nest under ``companyInfo``; each is the flat
# contact field of the same name (P44).
COMPANY_INFO_FIELDS: tuple[str, ...] = (
    "companyAccount",
    "website",
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
    "accountCrmId",
    "databaseCompanyId",
)

_TEXT_OR_NUMBER = "A string, or an integer taken as its decimal text (P43)"


class V1ContactInput(ContactInput):
    """A version 1 contact: every input field of version 2, and the callback URL."""

    callbackUrl: str | None = Field(
        default=None,
        description="Receives the scored contact, signed with the user's callback secret; "
        "https and public, like webhook URLs (P45)",
    )
    fsTotalCalls: Any = Field(
        default=None, description="Kept in unmappedFields; returned in callbacks (P43)"
    )


class V1CompanyInfo(BaseModel):
    """Company fields of an enrichment contact; each fills the flat field of the same name
    unless the contact gives that field itself (P44)."""

    model_config = ConfigDict(extra="allow")

    companyAccount: str | None = None
    website: str | None = None
    companyLinkedInUrl: str | None = None
    companyCountry: str | None = None
    companyState: str | None = None
    companyCity: str | None = None
    companyZip: str | None = None
    companyAddress: str | None = None
    numberOfEmployees: str | int | None = Field(default=None, description=_TEXT_OR_NUMBER)
    annualRevenue: str | int | None = Field(default=None, description=_TEXT_OR_NUMBER)
    industry: str | None = None
    primarySubIndustry: str | None = None
    sicCodes: str | None = None
    naicsCodes: str | None = None
    technologies: str | None = None
    accountCrmId: str | None = None
    databaseCompanyId: str | None = None


class V1EnrichContactInput(V1ContactInput):
    companyInfo: V1CompanyInfo | None = Field(
        default=None, description="The nested element shape; the flat shape is accepted too"
    )


# As in version 2, the contacts are checked one by one by the rules (partial acceptance): the
# elements are documented, not validated, here.
class V1ScoreRequest(BaseModel):
    contacts: Annotated[list[SkipValidation[V1ContactInput]], NotNull] = Field(
        min_length=1, max_length=MAX_CONTACTS, json_schema_extra=elements_of(V1ContactInput)
    )
    name: JobName | None = None


class V1EnrichRequest(BaseModel):
    contacts: Annotated[list[SkipValidation[V1EnrichContactInput]], NotNull] = Field(
        min_length=1, max_length=MAX_CONTACTS, json_schema_extra=elements_of(V1EnrichContactInput)
    )
    name: JobName | None = None


class RejectedV1Contact(RejectedRecord):
    model_config = ConfigDict(json_schema_extra=echoed(V1EnrichContactInput, "contact"))


class V1ContactRejections(RejectionSummary[RejectedV1Contact]):
    """The contacts a version 1 submission rejected, each as sent (nested ``companyInfo``
    included) with its reason; repeats are counted in ``duplicateCount`` instead (P42)."""


class V1ScoreData(BaseModel):
    totalRecordCount: int
    duplicateCount: int = Field(description="Repeats of an earlier contact: not accepted (P42)")
    acceptedRecordCount: int
    jobId: Uuid | None = Field(description="Null when no record was accepted")


class V1EnrichData(BaseModel):
    totalRecordCount: int
    acceptedRecordCount: int
    duplicateCount: int = Field(description="Extension: repeats of an earlier contact (P42)")
    jobId: Uuid | None = Field(description="Null when no record was accepted")


class V1ScoreResponse(BaseModel):
    data: V1ScoreData
    credits: ScoringCredits
    error: V1ContactRejections | None


class V1EnrichResponse(BaseModel):
    data: V1EnrichData
    credits: EnrichmentCredits
    error: V1ContactRejections | None
