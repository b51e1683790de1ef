"""Realistic bodies of the webhook operations, for the document: subscriptions, deliveries and
the test event."""

from __future__ import annotations

from typing import Any

SUBSCRIPTION_ID = "6abfb143-d197-4d8d-8f7f-ce0c01369166"
TEST_DELIVERY_ID = "a3a9486f-df3f-4331-a46f-d88e10365e13"
EVENT_TYPES = ["job.contact.scored", "job.completed"]

CREATE_REQUEST: dict[str, Any] = {
    "name": "CRM sync",
    "url": "https://hooks.northwind-logistics.com/dialscore",
    "eventTypes": EVENT_TYPES,
    "status": "active",
}
SUBSCRIPTION: dict[str, Any] = {
    "id": SUBSCRIPTION_ID,
    "name": "CRM sync",
    "url": "https://hooks.northwind-logistics.com/dialscore",
    "eventTypes": EVENT_TYPES,
    "triggers": EVENT_TYPES,
    "status": "active",
    "createdAt": "2025-06-03T14:30:00Z",
    "rateLimit": None,
    "disabledAt": None,
    "disabledReason": None,
}
CREATED_ANSWER: dict[str, Any] = {
    "data": {**SUBSCRIPTION, "secret": "whsec_80alO86wkLXScTwZHuseor8ZTcAjRG4uvc0Woc6Jrd4="}
}
# A subscription moved to another receiver (P140).
UPDATE_REQUEST: dict[str, Any] = {
    "name": "CRM sync (new cluster)",
    "url": "https://hooks-eu.northwind-logistics.com/dialscore",
    "rateLimit": 2,
}
UPDATED_ANSWER: dict[str, Any] = {"data": {**SUBSCRIPTION, **UPDATE_REQUEST}}
ROTATED_ANSWER: dict[str, Any] = {
    "data": {
        **SUBSCRIPTION,
        "secret": "whsec_q4Ld0Zb6mGfJ1X8yTn3sVwE2cHkRuA9oPiBzL5tMeQ0=",
        "previousSecretExpiresAt": "2025-06-10T09:15:00Z",
    }
}
LIST_ANSWER: dict[str, Any] = {"data": {"webhooks": [SUBSCRIPTION]}}
ACTIVE_ANSWER: dict[str, Any] = {"data": SUBSCRIPTION}
INACTIVE_ANSWER: dict[str, Any] = {"data": {**SUBSCRIPTION, "status": "inactive"}}
# A subscription turned off after 5 days of failed attempts (P160), as webhook.disabled
# carries it to another subscription of its owner.
DISABLED_SUBSCRIPTION: dict[str, Any] = {
    **SUBSCRIPTION,
    "status": "inactive",
    "disabledAt": "2025-06-08T14:30:02.118Z",
    "disabledReason": "receiver answered 503",
}
DISABLED_EVENT_SENT: dict[str, Any] = {
    "payload": DISABLED_SUBSCRIPTION,
    "eventType": "webhook.disabled",
    "timestamp": 1749393002118,
    "apiVersion": "v2",
    "id": "5f0c7a2e-8b1d-4e63-9a4f-2c7d1e0b9a35",
}

TEST_EVENT_SENT: dict[str, Any] = {
    "payload": {"subscriptionId": SUBSCRIPTION_ID, "message": "a test event from dialscore"},
    "eventType": "webhook.test",
    "timestamp": 1748961000000,
    "apiVersion": "v2",
    "id": TEST_DELIVERY_ID,
}
TEST_ANSWER: dict[str, Any] = {
    "data": {
        "id": TEST_DELIVERY_ID,
        "eventType": "webhook.test",
        "state": "pending",
        "attemptCount": 0,
        "nextAttemptAt": "2025-06-03T14:30:00Z",
        "lastStatusCode": None,
        "lastError": None,
        "createdAt": "2025-06-03T14:30:00Z",
        "completedAt": None,
        "bodyRemovedAt": None,
        "bodyRemovedReason": None,
        "attempts": [],
    }
}
# A delivery that failed once (the receiver answered 503) and is due again.
DELIVERY: dict[str, Any] = {
    "id": "edb363b5-714b-4b5a-bb2d-2fb6222d41e7",
    "eventType": "job.contact.scored",
    "state": "pending",
    "attemptCount": 1,
    "nextAttemptAt": "2025-06-03T14:22:37.118Z",
    "lastStatusCode": 503,
    "lastError": "receiver answered 503",
    "createdAt": "2025-06-03T14:22:05.602Z",
    "completedAt": None,
    "bodyRemovedAt": None,
    "bodyRemovedReason": None,
    "attempts": [
        {
            "attempt": 1,
            "statusCode": 503,
            "durationMs": 84,
            "error": "receiver answered 503",
            "attemptedAt": "2025-06-03T14:22:05.711Z",
        }
    ],
}
DELIVERIES_ANSWER: dict[str, Any] = {
    "data": {
        "deliveries": [DELIVERY],
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
RETRY_ANSWER: dict[str, Any] = {"data": {**DELIVERY, "nextAttemptAt": "2025-06-03T14:25:12.004Z"}}
# A recovery (P150) of the failures of an afternoon when the receiver was down.
RECOVER_REQUEST: dict[str, Any] = {
    "since": "2025-06-03T12:00:00Z",
    "until": "2025-06-03T18:00:00Z",
}
RECOVER_ANSWER: dict[str, Any] = {"data": {"recovered": 214, "skipped": 0, "more": False}}
