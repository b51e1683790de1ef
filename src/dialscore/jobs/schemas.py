"""Job and contact shapes: presenters for responses and events, and their documented models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dialscore.kit.clock import isoformat
from dialscore.kit.pagination import Pagination
from dialscore.models import Contact, Job
from dialscore.scoring.engine import PHONE_STATUSES
from dialscore.scoring.numbers import PHONE_SLOTS
from dialscore.submissions.schemas import CONTACT_INPUT_FIELDS

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

# Input fields presented as they were submitted. Phone slots, their types and countries are
# presented from the scored phones instead (D19: the flat fields mirror ``phones``).
_PHONE_DERIVED = frozenset(
    [*PHONE_SLOTS]
    + [f"{s}{suffix}" for s in PHONE_SLOTS for suffix in ("Type", "Country", "Status", "Region")]
)
_PLAIN_FIELDS = tuple(f for f in CONTACT_INPUT_FIELDS if f not in _PHONE_DERIVED)


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
    }


def present_contact(contact: Contact) -> dict[str, Any]:
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


def present_callback_contact(contact: Contact) -> dict[str, Any]:
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


# -- documented models ----------------------------------------------------------------------------


class JobOut(BaseModel):
    id: str
    clientId: str
    userId: str
    status: str = Field(description="Init, Processing, Finalized or Not Enriched")
    createdAt: str
    jobSource: str = Field(description="api or app")
    jobType: str
    name: str
    scoringType: str = Field(description="Extension: lightning or core")
    totalRecordCount: int = Field(description="Extension: contacts submitted")
    acceptedRecordCount: int = Field(description="Extension: contacts accepted into the job")
    processedCount: int = Field(description="Extension: contacts processed so far")
    modifiedAt: str = Field(description="Extension: time of the last change")


class PhoneEntry(BaseModel):
    number: str | None = Field(description="E.164 when valid, else the number as submitted")
    status: str | None = Field(
        description="Null until scored", json_schema_extra={"enum": [*PHONE_STATUSES, None]}
    )
    type: str | None
    country: str | None
    region: str | None
    position: int
    ivrPath: str | None = None
    reasons: list[str] = Field(
        default_factory=list,
        description="Extension: the evidence behind the status, in short sentences",
    )


class BestPhone(BaseModel):
    number: str
    status: str
    ivrPath: str | None = None


class ContactOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    userId: str
    jobId: str
    clientId: str
    firstName: str | None
    lastName: str | None
    phone: str | None
    companyAccount: str | None
    phones: list[PhoneEntry]
    bestPhone: BestPhone | None
    leadStatus: str = Field(
        description="P1, P2, P3, Needs Attention, No Numbers Found, Uncontacted"
    )
    rejectedReason: str | None = Field(
        default=None, description="Extension: why enrichment rejected the contact"
    )
    unmappedFields: dict[str, Any]
    createdAt: str
    updatedAt: str


class JobsData(BaseModel):
    jobs: list[JobOut]
    pagination: Pagination


class JobsResponse(BaseModel):
    data: JobsData


class JobResponse(BaseModel):
    data: JobOut


class ContactsData(BaseModel):
    contacts: list[ContactOut]
    pagination: Pagination


class ContactsResponse(BaseModel):
    data: ContactsData
