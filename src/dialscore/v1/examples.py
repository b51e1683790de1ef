"""Realistic bodies of the version 1 operations, for the document."""

from __future__ import annotations

from typing import Any

from dialscore.jobs.examples import CONTACT_INPUT, JOB_ID, REJECTED_INPUT, REJECTIONS

SCORE_REQUEST: dict[str, Any] = {
    "contacts": [
        {**CONTACT_INPUT, "callbackUrl": "https://crm.northwind-logistics.com/dialscore/callback"},
        REJECTED_INPUT,
        {**CONTACT_INPUT, "callbackUrl": "https://crm.northwind-logistics.com/dialscore/callback"},
    ]
}
SCORE_ANSWER: dict[str, Any] = {
    "data": {
        "totalRecordCount": 3,
        "duplicateCount": 1,
        "acceptedRecordCount": 1,
        "jobId": JOB_ID,
    },
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
            "companyInfo": {
                "companyAccount": "Northwind Logistics",
                "website": "https://northwind-logistics.com",
                "numberOfEmployees": 850,
            },
        }
    ]
}
ENRICH_ANSWER: dict[str, Any] = {
    "data": {
        "totalRecordCount": 1,
        "acceptedRecordCount": 1,
        "duplicateCount": 0,
        "jobId": JOB_ID,
    },
    "credits": {
        "creditsCharged": 1.0,
        "creditsRemaining": 998.9,
        "costPerContact": 1.0,
        "contactCount": 1,
    },
    "error": None,
}
