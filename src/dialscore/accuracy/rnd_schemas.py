"""The record of Reassigned Numbers Database queries as the API answers it: its models (the
contract) and a realistic answer for the document (P195)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from dialscore.kit.envelope import Timestamp, Uuid
from dialscore.kit.pagination import Pagination
from dialscore.scoring.rnd_record import RECORDED_ANSWERS

Answer = Literal[RECORDED_ANSWERS]  # type: ignore[valid-type]


class RndQueryOut(BaseModel):
    number: str = Field(description="The number asked about, E.164")
    consentDate: str = Field(
        description="The contact's consent date the database was asked about (YYYY-MM-DD)",
        json_schema_extra={"format": "date"},
    )
    askedAt: Timestamp = Field(description="When the scoring batch sent its queries")
    answer: Answer = Field(
        description="`yes`: permanently disconnected since the consent date, so possibly "
        "reassigned; `no`: not since then; `no_data`: the database has no data for the "
        "number over that time; `none`: no answer was read (the database was unavailable, "
        "refused the service's credentials, or the query was given up or rejected)"
    )
    jobId: Uuid | None = Field(description="The job whose scoring asked")
    contactId: Uuid | None = Field(description="The contact whose consent date was asked about")


class RndQueriesData(BaseModel):
    queries: list[RndQueryOut] = Field(description="Newest first")
    pagination: Pagination


class RndQueriesResponse(BaseModel):
    data: RndQueriesData


LIST_ANSWER: dict[str, Any] = {
    "data": {
        "queries": [
            {
                "number": "+14158672671",
                "consentDate": "2025-03-01",
                "askedAt": "2026-11-30T14:02:11.508Z",
                "answer": "no",
                "jobId": "3c0f6a54-8a4e-4d8e-9a53-2f0f3f1f9b21",
                "contactId": "8eae9198-9ae2-45c0-81f5-fef55bebecb4",
            },
            {
                "number": "+12127365000",
                "consentDate": "2024-11-15",
                "askedAt": "2026-11-30T14:02:11.508Z",
                "answer": "yes",
                "jobId": "3c0f6a54-8a4e-4d8e-9a53-2f0f3f1f9b21",
                "contactId": "5b1d2f0e-64a3-4c1b-8f5e-0d9c7a6e2b43",
            },
        ],
        "pagination": {
            "page": 1,
            "perPage": 100,
            "totalCount": 2,
            "totalPages": 1,
            "hasNextPage": False,
            "hasPreviousPage": False,
        },
    }
}
