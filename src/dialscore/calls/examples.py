"""Realistic bodies of the call operations, for the document."""

from __future__ import annotations

from typing import Any

_CONTACT_ID = "8eae9198-9ae2-45c0-81f5-fef55bebecb4"

REPORT_REQUEST: dict[str, Any] = {
    "calls": [
        {
            "number": "+14158672671",
            "outcome": "right_party",
            "contactId": _CONTACT_ID,
            "calledAt": "2025-06-04T16:05:12Z",
        },
        {
            "number": "(212) 736-5000",
            "outcome": "ivr",
            "ivrPath": "1,3,#",
            "calledAt": "2025-06-04T16:09:40-04:00",
        },
        {"number": "555-01", "outcome": "no_answer"},
    ]
}
REPORT_ANSWER: dict[str, Any] = {
    "data": {"totalRecordCount": 3, "acceptedRecordCount": 2},
    "error": {
        "rejectedRecordCount": 1,
        "records": [
            {
                "number": "555-01",
                "outcome": "no_answer",
                "rejectedReason": "number is not a valid phone number",
            }
        ],
    },
}
LIST_ANSWER: dict[str, Any] = {
    "data": {
        "calls": [
            {
                "id": "1207",
                "number": "+14158672671",
                "contactId": _CONTACT_ID,
                "outcome": "right_party",
                "ivrPath": None,
                "calledAt": "2025-06-04T16:05:12Z",
                "createdAt": "2025-06-04T16:05:13.402Z",
            }
        ],
        "pagination": {
            "page": 1,
            "perPage": 100,
            "totalCount": 1,
            "totalPages": 1,
            "hasNextPage": False,
            "hasPreviousPage": False,
        },
    }
}
