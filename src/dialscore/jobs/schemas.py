"""The job and contact resources: their models, which are the contract of the routes that
return them, and the presenters that make them from stored rows (also for events)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema
from typing_extensions import TypeAliasType

from dialscore.jobs.call_verdict import BestCallHoursOut, CallWindowOut
from dialscore.kit.clock import isoformat
from dialscore.kit.envelope import Timestamp, Uuid, number
from dialscore.kit.pagination import Pagination
from dialscore.kit.text import STORABLE_NOT_BLANK, StorableText
from dialscore.models import Contact, Job
from dialscore.scoring.engine import PHONE_STATUSES
from dialscore.scoring.numbers import PHONE_SLOTS, ParsedPhone

JOB_TYPES = (
    "scoring",
    "enrichment",
    "rescoring",
    "score_enriched",
    "enrich_rejected",
    "enrich_final",
    "core_scoring",
    "lightning_scoring",
    "enrich_and_score",
    "enrich_and_core",
    "enrich_score_rejected",
    "enrich_core_rejected",
)
ENRICHMENT_JOB_TYPES = frozenset(
    {
        "enrichment",
        "enrich_rejected",
        "enrich_final",
        "enrich_and_score",
        "enrich_and_core",
        "enrich_score_rejected",
        "enrich_core_rejected",
    }
)
TERMINAL_STATES = ("Finalized", "Not Enriched")
SCORING_TYPES = ("lightning", "core")

# What a job does with its contacts: score them, or enrich them and score what was found.
Kind = Literal["scoring", "enrichment"]
# The most contacts a request may submit (D7); only the web app's uploads hold more.
MAX_CONTACTS = 1000


@dataclass(frozen=True)
class NewContact:
    """A contact to put in a job: its input fields, the fields kept unmapped, its numbers;
    a version 1 callback URL; for a rescoring, what enrichment found the first time."""

    fields: dict[str, str]
    unmapped: dict[str, Any]
    phones: list[ParsedPhone]
    callback_url: str | None = None
    enrichment_contact_id: str | None = None
    enriched_types: list[str | None] | None = None
    # The contact's row of an uploaded file, cell by cell, in the file's column order.
    source_row: list[str] | None = None

    @property
    def billable_phones(self) -> int:
        """Valid, distinct numbers: what scoring charges for (D9)."""
        return len({p.e164 for p in self.phones if p.e164 is not None})


@dataclass(frozen=True)
class OpenedJob:
    """What accepting contacts into a job did: the job (None when nothing was accepted,
    P1), the charge, the balance after it, the units charged (phones or contacts) and the
    contacts in the job."""

    job_id: str | None
    charged: Decimal
    remaining: Decimal
    units: int
    contacts: int


_TYPE_DOC = "mobile, direct, hq or other (synonyms such as cell or main are read, P8)"
_COUNTRY_DOC = "ISO alpha-2 country of a number given without + (default US)"
# Spreadsheets and CRMs export these as numbers (P4, P43).
_TEXT_OR_NUMBER = "A string, or a number taken as its decimal text"
_DEPRECATED = "Deprecated: mirrors the first five entries of phones (D19)"


class ContactInput(BaseModel):
    """A contact as a client sends it: every field of the Contact resource a client may give,
    all strings (a JSON number is taken as its decimal text). Unknown fields are kept in
    ``unmappedFields``, never dropped (D7)."""

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
    phoneType: str | None = Field(default=None, description=_TYPE_DOC)
    phone2Type: str | None = None
    phone3Type: str | None = None
    phone4Type: str | None = None
    phone5Type: str | None = None
    phoneCountry: str | None = Field(default=None, description=_COUNTRY_DOC)
    phone2Country: str | None = None
    phone3Country: str | None = None
    phone4Country: str | None = None
    phone5Country: str | None = None
    street: str | None = None
    city: str | None = None
    stateProvince: str | None = None
    zipPostalCode: str | None = None
    country: str | None = None
    timeZone: str | None = None
    dept: str | None = None
    level: str | None = None
    jobFunction: str | None = None
    persona: str | None = None
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
    primarySubIndustry: str | None = None
    sicCodes: str | None = None
    naicsCodes: str | None = None
    technologies: str | None = None
    campaignListName: str | None = None
    recordOwner: str | None = None
    contactCrmId: str | None = None
    accountCrmId: str | None = None
    databaseContactId: str | None = None
    databaseCompanyId: str | None = None
    customerContactId: str | None = None
    intent: str | None = None
    unmappedFields: dict[str, Any] | None = None


# The contact fields a client may send, in the order they are stored and returned.
CONTACT_INPUT_FIELDS: tuple[str, ...] = tuple(
    name for name in ContactInput.model_fields if name != "unmappedFields"
)
# The phone slots with their types and countries: returned from the scored phones, not as
# they were submitted (D19: the flat fields mirror ``phones``).
PHONE_INPUT_FIELDS = frozenset(
    [*PHONE_SLOTS] + [f"{s}{suffix}" for s in PHONE_SLOTS for suffix in ("Type", "Country")]
)
# Input fields returned as they were submitted.
_PLAIN_FIELDS = tuple(f for f in CONTACT_INPUT_FIELDS if f not in PHONE_INPUT_FIELDS)

SourceQuery = Annotated[
    Literal["app", "api", "all"], Query(description="Where the jobs came from (D14)")
]

MAX_JOB_NAME = 200
JobName = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_JOB_NAME),
    StorableText,
    Field(
        description="The job's name; generated from its type and time when absent (D13)",
        json_schema_extra={"pattern": STORABLE_NOT_BLANK},
    ),
]

# Named, so that the document has one schema of each (a generated client one enum of each).
PhoneStatus = TypeAliasType("PhoneStatus", Literal[PHONE_STATUSES])  # type: ignore[valid-type]
Region = TypeAliasType("Region", Literal["US", "EMEA", "APAC"])
LeadStatus = TypeAliasType(
    "LeadStatus",
    Literal["P1", "P2", "P3", "Needs Attention", "No Numbers Found", "Uncontacted"],
)
JobStatus = TypeAliasType("JobStatus", Literal["Init", "Processing", "Finalized", "Not Enriched"])
JobType = TypeAliasType("JobType", Literal[JOB_TYPES])  # type: ignore[valid-type]
ScoringType = TypeAliasType("ScoringType", Literal["lightning", "core"])
# The type of a phone entry: one of P8's four, or the label of a number enrichment found (D19).
PhoneType = TypeAliasType(
    "PhoneType",
    Annotated[
        str,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "string", "enum": ["mobile", "direct", "hq", "other"]},
                    {"type": "string", "pattern": "^Service Enriched Phone [1-9][0-9]*$"},
                ]
            }
        ),
    ],
)


class JobOut(BaseModel):
    id: Uuid
    clientId: Uuid
    userId: Uuid
    status: JobStatus = Field(description="Init, then Processing, then a terminal state (D12)")
    createdAt: Timestamp
    jobSource: Literal["api", "app"]
    jobType: JobType
    name: str
    scoringType: ScoringType = Field(description="Extension (P12)")
    totalRecordCount: int = Field(description="Extension: contacts submitted")
    acceptedRecordCount: int = Field(description="Extension: contacts accepted into the job")
    processedCount: int = Field(description="Extension: contacts processed so far")
    modifiedAt: Timestamp = Field(description="Extension: time of the last change")
    creditsRefunded: float = Field(
        ge=0,
        description="Extension (P202, P204): the credits given back when the job finished, "
        "for the contacts for which enrichment found no new number and for those whose new "
        "numbers all came through the client's own provider keys (each at the price it was "
        "charged); 0 when none",
    )


class PhoneEntry(BaseModel):
    number: str | None = Field(description="E.164 when valid, else the number as submitted")
    status: PhoneStatus | None = Field(description="Null until scored")
    type: PhoneType | None = Field(
        description="mobile, direct, hq, other, or Service Enriched Phone N for a number "
        "enrichment found; null for an invalid number given without a type"
    )
    country: str | None = Field(description="ISO alpha-2 country of the number")
    region: Region | None
    position: int = Field(ge=1, description="1-based position within the contact")
    ivrPath: str | None = None
    connectRate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Extension (D17): the estimated share of calls that reach the person, "
        "two decimals; null for na and unscored phones",
    )
    reasons: list[str] = Field(
        default_factory=list,
        description="Extension: the evidence behind the status, in short sentences",
    )
    timeZone: str | None = Field(
        default=None,
        description="Extension (P177): the number's IANA time zone (its block's, narrowed by "
        "the contact's address); null when not known or ambiguous",
    )
    callWindow: CallWindowOut | None = Field(
        default=None,
        description="Extension (P177): today's legal calling window in the number's local "
        "time and the rule that sets it; null when calls are not allowed today or the zone "
        "or rules are not known",
    )
    callableNow: bool | None = Field(
        default=None,
        description="Extension (P177): whether the number may be called at the moment the "
        "contact is shown (the response made, the event built); null when not known",
    )
    nextCallableAt: Timestamp | None = Field(
        default=None,
        description="Extension (P177): the first instant, at or after now, the number may be "
        "called (UTC, ISO 8601); null when not known or nothing opens within 31 days",
    )
    bestCallHours: list[BestCallHoursOut] = Field(
        default_factory=list,
        description="Extension (P177): local hours of the week inside the legal window when "
        "a call is most likely to connect, best first",
    )


class BestPhone(BaseModel):
    number: str
    status: PhoneStatus
    ivrPath: str | None = None


class ContactOut(BaseModel):
    """A contact as returned and sent in ``job.contact.scored``: every field of the Contact
    resource, null when unknown (P13)."""

    id: Uuid
    userId: Uuid
    jobId: Uuid
    clientId: Uuid
    firstName: str | None
    lastName: str | None
    email: str | None
    title: str | None
    companyAccount: str | None
    leadId: str | None
    phoneExt: str | None
    street: str | None
    city: str | None
    stateProvince: str | None
    zipPostalCode: str | None
    country: str | None
    timeZone: str | None
    dept: str | None
    level: str | None
    jobFunction: str | None
    persona: str | None
    website: str | None
    linkedInUrl: str | None
    companyLinkedInUrl: str | None
    companyCountry: str | None
    companyState: str | None
    companyCity: str | None
    companyZip: str | None
    companyAddress: str | None
    numberOfEmployees: str | None
    annualRevenue: str | None
    industry: str | None
    primarySubIndustry: str | None
    sicCodes: str | None
    naicsCodes: str | None
    technologies: str | None
    campaignListName: str | None
    recordOwner: str | None
    contactCrmId: str | None
    accountCrmId: str | None
    databaseContactId: str | None
    databaseCompanyId: str | None
    customerContactId: str | None
    intent: str | None
    phones: list[PhoneEntry]
    bestPhone: BestPhone | None
    phone: str | None = Field(description=_DEPRECATED)
    phoneStatus: PhoneStatus | None = Field(description=_DEPRECATED)
    phoneType: PhoneType | None = Field(description=_DEPRECATED)
    phoneCountry: str | None = Field(description=_DEPRECATED)
    phoneRegion: Region | None = Field(description=_DEPRECATED)
    phone2: str | None = Field(description=_DEPRECATED)
    phone2Status: PhoneStatus | None = Field(description=_DEPRECATED)
    phone2Type: PhoneType | None = Field(description=_DEPRECATED)
    phone2Country: str | None = Field(description=_DEPRECATED)
    phone2Region: Region | None = Field(description=_DEPRECATED)
    phone3: str | None = Field(description=_DEPRECATED)
    phone3Status: PhoneStatus | None = Field(description=_DEPRECATED)
    phone3Type: PhoneType | None = Field(description=_DEPRECATED)
    phone3Country: str | None = Field(description=_DEPRECATED)
    phone3Region: Region | None = Field(description=_DEPRECATED)
    phone4: str | None = Field(description=_DEPRECATED)
    phone4Status: PhoneStatus | None = Field(description=_DEPRECATED)
    phone4Type: PhoneType | None = Field(description=_DEPRECATED)
    phone4Country: str | None = Field(description=_DEPRECATED)
    phone4Region: Region | None = Field(description=_DEPRECATED)
    phone5: str | None = Field(description=_DEPRECATED)
    phone5Status: PhoneStatus | None = Field(description=_DEPRECATED)
    phone5Type: PhoneType | None = Field(description=_DEPRECATED)
    phone5Country: str | None = Field(description=_DEPRECATED)
    phone5Region: Region | None = Field(description=_DEPRECATED)
    leadStatus: LeadStatus
    enrichmentContactId: str | None = Field(
        description="The record enrichment matched the contact to, when one was"
    )
    rejectedReason: str | None = Field(
        description="Extension: why enrichment rejected the contact (P13)"
    )
    unmappedFields: dict[str, Any]
    createdAt: Timestamp
    updatedAt: Timestamp


class JobsPage(BaseModel):
    jobs: list[JobOut]
    pagination: Pagination


class JobsResponse(BaseModel):
    data: JobsPage


class JobResponse(BaseModel):
    data: JobOut


class ContactsPage(BaseModel):
    contacts: list[ContactOut]
    pagination: Pagination


class ContactsResponse(BaseModel):
    data: ContactsPage


# -- presenters ---------------------------------------------------------------------------------


def present_job(job: Job) -> dict[str, Any]:
    return {
        "id": job.id,
        "clientId": job.client_id,
        "userId": job.user_id,
        "status": job.status,
        "createdAt": isoformat(job.created_at),
        "jobSource": job.source,
        "jobType": job.job_type,
        "name": job.name,
        "scoringType": job.scoring_type,
        "totalRecordCount": job.total_count,
        "acceptedRecordCount": job.accepted_count,
        "processedCount": job.processed_count,
        "modifiedAt": isoformat(job.updated_at),
        "creditsRefunded": number(job.credits_refunded),
    }


@dataclass(frozen=True, slots=True)
class ContactRow:
    """A contact as a job's processing reads, scores and presents it: its columns, without the
    ORM's bookkeeping (a batch of them is read, updated and presented a few hundred at a
    time)."""

    id: str
    job_id: str
    client_id: str
    user_id: str
    ordinal: int
    state: str
    fields: dict[str, Any]
    unmapped_fields: dict[str, Any]
    phones: list[dict[str, Any]]
    lead_status: str
    best_phone: dict[str, Any] | None
    enriched_types: list[str | None] | None
    rejected_reason: str | None
    enrichment_contact_id: str | None
    callback_url: str | None
    created_at: datetime
    updated_at: datetime
    scored_at: datetime | None


def present_contact(contact: Contact | ContactRow) -> dict[str, Any]:
    """A contact in the shape of ``ContactOut``, for responses and events."""
    fields = contact.fields
    out: dict[str, Any] = {
        "id": contact.id,
        "userId": contact.user_id,
        "jobId": contact.job_id,
        "clientId": contact.client_id,
    }
    for name in _PLAIN_FIELDS:
        out[name] = fields.get(name)
    phones = contact.phones
    out["phones"] = phones
    out["bestPhone"] = contact.best_phone
    for index, slot in enumerate(PHONE_SLOTS):
        entry = phones[index] if index < len(phones) else None
        out[slot] = entry["number"] if entry else None
        out[f"{slot}Status"] = entry["status"] if entry else None
        out[f"{slot}Type"] = entry["type"] if entry else None
        out[f"{slot}Country"] = entry["country"] if entry else None
        out[f"{slot}Region"] = entry["region"] if entry else None
    out["leadStatus"] = contact.lead_status
    out["enrichmentContactId"] = contact.enrichment_contact_id
    out["rejectedReason"] = contact.rejected_reason
    out["unmappedFields"] = contact.unmapped_fields
    out["createdAt"] = isoformat(contact.created_at)
    out["updatedAt"] = isoformat(contact.updated_at)
    return out


# Keys of the version 2 contact that the version 1 flat shape never had.
_V2_ONLY = ("phones", "bestPhone")


def present_callback_contact(contact: Contact | ContactRow) -> dict[str, Any]:
    """A scored contact as its callback URL receives it (D27, P46): the version 1 flat shape,
    the version 2 contact without ``phones`` and ``bestPhone`` (the flat phone fields carry the
    first five numbers with their status, type, country and region), with ``callbackUrl`` and
    ``fsTotalCalls``."""
    out = {k: v for k, v in present_contact(contact).items() if k not in _V2_ONLY}
    unmapped = dict(contact.unmapped_fields)
    out["fsTotalCalls"] = unmapped.pop("fsTotalCalls", None)
    out["unmappedFields"] = unmapped
    out["callbackUrl"] = contact.callback_url
    return out
