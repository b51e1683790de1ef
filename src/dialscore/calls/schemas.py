"""Call reports: limits, the request and response models, and the presenter of a stored call."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from dialscore.kit.clock import isoformat
from dialscore.kit.envelope import (
    NotNull,
    RejectedRecord,
    RejectionSummary,
    Timestamp,
    Uuid,
    echoed,
    elements_of,
)
from dialscore.kit.pagination import Pagination
from dialscore.models import CallOutcome
from dialscore.scoring.evidence import OUTCOMES

MAX_CALLS = 1000
MAX_IVR_PATH_LENGTH = 200
# A dialer's clock may run a little ahead of ours; anything further ahead is a mistake.
FUTURE_TOLERANCE = timedelta(minutes=5)
EARLIEST_CALL = datetime(2000, 1, 1, tzinfo=UTC)


def present_call(call: CallOutcome) -> dict[str, Any]:
    return {
        "id": str(call.id),
        "number": call.number,
        "contactId": call.contact_id,
        "outcome": call.outcome,
        "ivrPath": call.ivr_path,
        "calledAt": isoformat(call.called_at),
        "createdAt": isoformat(call.created_at),
    }


# -- models ----------------------------------------------------------------------------


class CallInput(BaseModel):
    """One reported call. Unknown fields are ignored."""

    number: str = Field(description="The number dialled; without '+' it is read in `country`")
    country: str | None = Field(
        default=None, description="ISO alpha-2 country of a number without '+'; default US"
    )
    outcome: str = Field(
        description="What happened (case-insensitive)", json_schema_extra={"enum": list(OUTCOMES)}
    )
    contactId: Uuid | None = Field(
        default=None, description="A contact of the caller's client the call was for"
    )
    ivrPath: str | None = Field(
        default=None,
        description=f"Keys pressed to reach the person, at most {MAX_IVR_PATH_LENGTH} characters",
    )
    calledAt: Timestamp | None = Field(
        default=None,
        description="ISO 8601 date-time with a time zone; default the time of the request",
    )


class CallsRequest(BaseModel):
    """Up to 1000 reported calls. Each is checked alone, so that one bad record is rejected
    with its reason while the others are stored: the elements are documented as CallInput
    but not validated as such here."""

    calls: Annotated[list[SkipValidation[CallInput]], NotNull] = Field(
        min_length=1, max_length=MAX_CALLS, json_schema_extra=elements_of(CallInput)
    )


class CallsData(BaseModel):
    totalRecordCount: int
    acceptedRecordCount: int


class RejectedCall(RejectedRecord):
    model_config = ConfigDict(json_schema_extra=echoed(CallInput, "call"))


class CallRejections(RejectionSummary[RejectedCall]):
    """The calls a report rejected, each as sent with its reason (P32)."""


class CallsResponse(BaseModel):
    data: CallsData
    error: CallRejections | None


Outcome = Literal[OUTCOMES]  # type: ignore[valid-type]


class CallOut(BaseModel):
    id: str = Field(
        description="The call's number in the service", json_schema_extra={"pattern": "^[0-9]+$"}
    )
    number: str = Field(description="E.164")
    contactId: Uuid | None
    outcome: Outcome
    ivrPath: str | None
    calledAt: Timestamp
    createdAt: Timestamp


class CallsListData(BaseModel):
    calls: list[CallOut]
    pagination: Pagination


class CallsListResponse(BaseModel):
    data: CallsListData
