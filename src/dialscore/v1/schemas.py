"""Version 1 shapes: the documented request and response models of the version 1 routes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dialscore.submissions.schemas import (
    MAX_CONTACTS,
    EnrichmentCredits,
    RejectionSummary,
    ScoringCredits,
)

# Company fields an enrichment contact may nest under ``companyInfo``; each is the flat
# contact field of the same name.
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
# -- documented models ----------------------------------------------------------------------------

_TEXT_OR_NUMBER = "A string, or an integer taken as its decimal text"


class V1ContactInput(BaseModel):
    """A version 1 contact. Every field of the Contact resource is accepted as a string;
    unknown fields are kept in ``unmappedFields``."""

    model_config = ConfigDict(extra="allow")

    firstName: str | None = None
    lastName: str | None = None
    email: str | None = None
    title: str | None = None
    companyAccount: str | None = None
    leadId: str | None = None
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
    phoneCountry: str | None = Field(
        default=None, description="ISO alpha-2 country of a number given without +"
    )
    phone2Country: str | None = None
    phone3Country: str | None = None
    phone4Country: str | None = None
    phone5Country: str | None = None
    street: str | None = None
    city: str | None = None
    stateProvince: str | None = None
    zipPostalCode: str | None = None
    country: str | None = None
    website: str | None = None
    linkedInUrl: str | None = None
    companyLinkedInUrl: str | None = None
    companyCountry: str | None = None
    companyState: str | None = None
    companyCity: str | None = None
    companyZip: str | None = None
    companyAddress: str | None = None
    numberOfEmployees: str | int | None = Field(default=None, description=_TEXT_OR_NUMBER)
    annualRevenue: str | int | None = Field(default=None, description=_TEXT_OR_NUMBER)
    industry: str | None = None
    contactCrmId: str | None = None
    accountCrmId: str | None = None
    databaseContactId: str | None = None
    databaseCompanyId: str | None = None
    customerContactId: str | None = None
    callbackUrl: str | None = Field(
        default=None,
        description="Receives the scored contact, signed with the user's callback secret; "
        "https and public, like webhook URLs",
    )
    fsTotalCalls: int | str | None = Field(
        default=None, description="Kept in unmappedFields; returned in callbacks"
    )
    unmappedFields: dict[str, Any] | None = None


class V1CompanyInfo(BaseModel):
    """Company fields of an enrichment contact; each fills the flat field of the same name
    unless the contact gives that field itself."""

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


class V1EnrichContactInput(V1ContactInput):
    companyInfo: V1CompanyInfo | None = Field(
        default=None, description="The nested element shape; the flat shape is accepted too"
    )


class V1ScoreRequest(BaseModel):
    contacts: list[V1ContactInput] = Field(min_length=1, max_length=MAX_CONTACTS)
    name: str | None = Field(default=None, description="Job name; generated when absent")


class V1EnrichRequest(BaseModel):
    contacts: list[V1EnrichContactInput] = Field(min_length=1, max_length=MAX_CONTACTS)
    name: str | None = Field(default=None, description="Job name; generated when absent")


class V1ScoreData(BaseModel):
    totalRecordCount: int
    duplicateCount: int = Field(description="Repeats of an earlier contact: not accepted")
    acceptedRecordCount: int
    jobId: str | None = Field(description="Null when no record was accepted")


class V1EnrichData(BaseModel):
    totalRecordCount: int
    acceptedRecordCount: int
    duplicateCount: int = Field(description="Extension: repeats of an earlier contact")
    jobId: str | None = Field(description="Null when no record was accepted")


class V1ScoreResponse(BaseModel):
    data: V1ScoreData
    credits: ScoringCredits
    error: RejectionSummary | None


class V1EnrichResponse(BaseModel):
    data: V1EnrichData
    credits: EnrichmentCredits
    error: RejectionSummary | None
