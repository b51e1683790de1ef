"""Realistic bodies of the operations and events about jobs and contacts, for the document:
what a client sends and what the service answers, as it answers it."""

from __future__ import annotations

from typing import Any

from dialscore.jobs.schemas import ContactOut

CLIENT_ID = "604a0ff8-9abf-4fb2-97c0-bf3411bc2133"
USER_ID = "21a6f9aa-8831-48ed-94e0-b6185604fd89"
JOB_ID = "5299a46a-5793-45fe-8bc1-fd07c0c8907a"
RESCORING_JOB_ID = "41f16a92-33aa-49ed-a8db-bf937302d771"
ENRICHMENT_JOB_ID = "4faea5d8-7fb4-476c-afd2-bbe8c190777a"
CONTACT_ID = "8eae9198-9ae2-45c0-81f5-fef55bebecb4"
JOB_NAME = "Q3 outbound - West"

CONTACT_INPUT: dict[str, Any] = {
    "firstName": "Dana",
    "lastName": "Whitfield",
    "email": "dana.whitfield@northwind-logistics.com",
    "title": "VP Operations",
    "companyAccount": "Northwind Logistics",
    "phone": "+1 415 867 2671",
    "phoneType": "mobile",
    "phone2": "(212) 736-5000",
    "phone2Type": "direct",
    "linkedInUrl": "https://www.linkedin.com/in/dana-whitfield",
    "contactCrmId": "003Hs00001aBcDeF",
}
# Rejected: blank first name (D5).
REJECTED_INPUT: dict[str, Any] = {
    "firstName": "",
    "lastName": "Okafor",
    "phone": "+44 20 7946 0958",
}
REJECTIONS: dict[str, Any] = {
    "rejectedRecordCount": 1,
    "records": [{**REJECTED_INPUT, "rejectedReason": "firstName is required"}],
}

SCORE_REQUEST: dict[str, Any] = {
    "contacts": [CONTACT_INPUT, REJECTED_INPUT],
    "scoringType": "lightning",
    "name": JOB_NAME,
}
SCORE_ANSWER: dict[str, Any] = {
    "data": {"totalRecordCount": 2, "acceptedRecordCount": 1, "jobId": JOB_ID},
    "credits": {
        "creditsCharged": 0.1,
        "creditsRemaining": 999.9,
        "costPerPhone": 0.05,
        "phoneCount": 2,
    },
    "error": REJECTIONS,
}
ENRICH_REQUEST: dict[str, Any] = {
    "contacts": [
        {
            "firstName": "Dana",
            "lastName": "Whitfield",
            "companyAccount": "Northwind Logistics",
            "website": "https://northwind-logistics.com",
            "contactCrmId": "003Hs00001aBcDeF",
        },
        {"firstName": "Priya", "lastName": "Raman", "contactCrmId": "003Hs00001aBcDeG"},
    ],
    "scoringType": "lightning",
}
ENRICH_ANSWER: dict[str, Any] = {
    "data": {"totalRecordCount": 2, "acceptedRecordCount": 1, "jobId": ENRICHMENT_JOB_ID},
    "credits": {
        "creditsCharged": 1.0,
        "creditsRemaining": 998.9,
        "costPerContact": 1.0,
        "contactCount": 1,
    },
    "error": {
        "rejectedRecordCount": 1,
        "records": [
            {
                "firstName": "Priya",
                "lastName": "Raman",
                "contactCrmId": "003Hs00001aBcDeG",
                "rejectedReason": "companyAccount, linkedInUrl or companyLinkedInUrl is required",
            }
        ],
    },
}

JOB: dict[str, Any] = {
    "id": JOB_ID,
    "clientId": CLIENT_ID,
    "userId": USER_ID,
    "status": "Finalized",
    "createdAt": "2025-06-03T14:22:05.518Z",
    "jobSource": "api",
    "jobType": "lightning_scoring",
    "name": JOB_NAME,
    "scoringType": "lightning",
    "totalRecordCount": 2,
    "acceptedRecordCount": 1,
    "processedCount": 1,
    "modifiedAt": "2025-06-03T14:22:05.671Z",
    "creditsRefunded": 0,
}


def _pagination(total: int) -> dict[str, Any]:
    return {
        "page": 1,
        "perPage": 100,
        "totalCount": total,
        "totalPages": 1,
        "hasNextPage": False,
        "hasPreviousPage": False,
    }


JOB_ANSWER: dict[str, Any] = {"data": JOB}
JOBS_ANSWER: dict[str, Any] = {"data": {"jobs": [JOB], "pagination": _pagination(1)}}
RESCORE_REQUEST: dict[str, Any] = {"name": f"{JOB_NAME}, rescored"}
RESCORE_ANSWER: dict[str, Any] = {
    "data": {"totalRecordCount": 1, "acceptedRecordCount": 1, "jobId": RESCORING_JOB_ID},
    "credits": {
        "creditsCharged": 0.1,
        "creditsRemaining": 999.8,
        "costPerPhone": 0.05,
        "phoneCount": 2,
    },
    "error": None,
}

_PHONES: list[dict[str, Any]] = [
    {
        "number": "+14158672671",
        "status": "p1",
        "type": "mobile",
        "country": "US",
        "region": "US",
        "position": 1,
        "ivrPath": None,
        "connectRate": 0.21,
        "reasons": [
            "given as mobile; line type not confirmed",
            "no calls reported: expected connect rate 21 %",
        ],
    },
    {
        "number": "+12127365000",
        "status": "p2",
        "type": "direct",
        "country": "US",
        "region": "US",
        "position": 2,
        "ivrPath": None,
        "connectRate": 0.07,
        "reasons": [
            "given as a direct line; line type not confirmed",
            "no calls reported: expected connect rate 7.3 %",
        ],
    },
]


def _flat_phones() -> dict[str, Any]:
    """The deprecated flat fields of the example's phones (D19)."""
    out: dict[str, Any] = {}
    for slot, entry in zip(("phone", "phone2"), _PHONES, strict=True):
        out[slot] = entry["number"]
        for suffix in ("Status", "Type", "Country", "Region"):
            out[f"{slot}{suffix}"] = entry[suffix.lower()]
    return out


# Every field of the contact resource, null where the contact says nothing (P13).
CONTACT: dict[str, Any] = {name: None for name in ContactOut.model_fields} | {
    "id": CONTACT_ID,
    "userId": USER_ID,
    "jobId": JOB_ID,
    "clientId": CLIENT_ID,
    **{k: v for k, v in CONTACT_INPUT.items() if not k.startswith("phone")},
    "phones": _PHONES,
    "bestPhone": {"number": "+14158672671", "status": "p1", "ivrPath": None},
    **_flat_phones(),
    "leadStatus": "P1",
    "unmappedFields": {},
    "createdAt": "2025-06-03T14:22:05.518Z",
    "updatedAt": "2025-06-03T14:22:05.602Z",
}
CONTACTS_ANSWER: dict[str, Any] = {"data": {"contacts": [CONTACT], "pagination": _pagination(1)}}

CONTACT_SCORED_EVENT: dict[str, Any] = {
    "payload": {"contact": CONTACT, "job": {"id": JOB_ID, "type": "lightning_scoring"}},
    "eventType": "job.contact.scored",
    "timestamp": 1748960525602,
    "apiVersion": "v2",
    "id": "edb363b5-714b-4b5a-bb2d-2fb6222d41e7",
}
JOB_COMPLETED_EVENT: dict[str, Any] = {
    "payload": {
        "jobId": JOB_ID,
        "jobType": "lightning_scoring",
        "jobName": JOB_NAME,
        "jobStatus": "Finalized",
        "modifiedAt": "2025-06-03T14:22:05.671Z",
        "creditsRefunded": 0,
    },
    "eventType": "job.completed",
    "timestamp": 1748960525671,
    "apiVersion": "v2",
    "id": "dd89b385-5bc1-43d6-9b41-3fd76b57093b",
}


def _estimated(answer: dict[str, Any]) -> dict[str, Any]:
    """A submission's answer as its estimate gives it: no job, ``estimate`` true (P200)."""
    charged = answer["credits"]["creditsCharged"]
    return {
        **answer,
        "data": {**answer["data"], "jobId": None, "estimate": True},
        # A key with a monthly limit of 500 credits that spent nothing yet this month (P201).
        "credits": {**answer["credits"], "keyCreditsLeftThisMonth": 500 - charged},
    }


SCORE_ESTIMATE: dict[str, Any] = _estimated(SCORE_ANSWER)
ENRICH_ESTIMATE: dict[str, Any] = _estimated(ENRICH_ANSWER)
