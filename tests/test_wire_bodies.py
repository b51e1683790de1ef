"""Bodies built from their models: job.completed's payload, a subscription and a delivery of
the log are the JSON form of their documented models, and the same bytes as the dict literals
they were built as before (same keys, order, nulls and number types)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from dialscore.jobs.events import JobCompletedPayload
from dialscore.jobs.processing import completed_payload
from dialscore.models import Job, WebhookAttempt, WebhookDelivery, WebhookSubscription
from dialscore.webhooks.schemas import (
    DeliveryOut,
    SubscriptionCreated,
    SubscriptionOut,
    present_delivery,
    present_subscription,
)

# Not UTC, with microseconds: the times are answered in UTC with a Z, as before.
WHEN = datetime(2026, 3, 4, 15, 6, 7, 891234, tzinfo=timezone(timedelta(hours=2)))
LATER = datetime(2026, 3, 4, 13, 30, tzinfo=UTC)


def _wire(value: Any) -> str:
    """What goes on the wire: keys in their order, nulls kept, numbers as they are."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_job_completed_payload_is_its_model_and_the_former_literal() -> None:
    # The spec's fields as before, then the credits refunded (P208), as a whole number when
    # they are one.
    job = Job(id="0f8e3a52-3c1a-4b9f-9a51-6c2b0f1d2e3a", job_type="enrichment", name="Leads é")
    for status, refunded, written in (
        ("Finalized", Decimal(0), 0),
        ("Not Enriched", Decimal("0.2664"), 0.2664),
        ("Finalized", Decimal("2.0000"), 2),
    ):
        built = completed_payload(job, status, WHEN, refunded)
        former = {
            "jobId": job.id,
            "jobType": job.job_type,
            "jobName": job.name,
            "jobStatus": status,
            "modifiedAt": "2026-03-04T13:06:07.891234Z",
            "creditsRefunded": written,
        }
        assert _wire(built) == _wire(former)
        assert JobCompletedPayload.model_validate(built).model_dump(mode="json") == built


def _subscription(rate_limit: float | None) -> WebhookSubscription:
    return WebhookSubscription(
        id="5b0c2f8e-1d7a-4c3b-8e9f-0a1b2c3d4e5f",
        name="CRM",
        url="https://hooks.example.com/in",
        event_types=["job.completed", "job.contact.scored"],
        status="inactive",
        created_at=WHEN,
        rate_limit=rate_limit,
    )


def test_subscription_is_its_model_and_the_former_literal() -> None:
    for rate_limit in (None, 0.5, 5.0):
        subscription = _subscription(rate_limit)
        former: dict[str, Any] = {
            "id": subscription.id,
            "name": "CRM",
            "url": "https://hooks.example.com/in",
            "eventTypes": ["job.completed", "job.contact.scored"],
            "triggers": ["job.completed", "job.contact.scored"],
            "status": "inactive",
            "createdAt": "2026-03-04T13:06:07.891234Z",
            "rateLimit": rate_limit,
            "disabledAt": None,
            "disabledReason": None,
        }
        built = present_subscription(subscription)
        assert _wire(built) == _wire(former)
        assert SubscriptionOut.model_validate(built).model_dump(mode="json") == built

        with_secret = present_subscription(subscription, secret="whsec_abc")
        assert _wire(with_secret) == _wire({**former, "secret": "whsec_abc"})
        assert SubscriptionCreated.model_validate(with_secret).model_dump(mode="json") == (
            with_secret
        )


def _delivery(**fields: Any) -> WebhookDelivery:
    base: dict[str, Any] = {
        "id": "9c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5",
        "event_type": "job.contact.scored",
        "state": "pending",
        "attempts": 2,
        "available_at": LATER,
        "last_status_code": 503,
        "last_error": "HTTP 503",
        "created_at": WHEN,
        "completed_at": None,
        "body_removed_at": None,
        "body_removed_reason": None,
    }
    return WebhookDelivery(**(base | fields))


def _attempts() -> list[WebhookAttempt]:
    return [
        WebhookAttempt(
            number=1, status_code=None, duration_ms=10000, error="timed out", attempted_at=WHEN
        ),
        WebhookAttempt(
            number=2, status_code=503, duration_ms=42, error="HTTP 503", attempted_at=LATER
        ),
    ]


def test_delivery_is_its_model_and_the_former_literal() -> None:
    pending = _delivery()
    former_attempts = [
        {
            "attempt": 1,
            "statusCode": None,
            "durationMs": 10000,
            "error": "timed out",
            "attemptedAt": "2026-03-04T13:06:07.891234Z",
        },
        {
            "attempt": 2,
            "statusCode": 503,
            "durationMs": 42,
            "error": "HTTP 503",
            "attemptedAt": "2026-03-04T13:30:00Z",
        },
    ]
    former = {
        "id": pending.id,
        "eventType": "job.contact.scored",
        "state": "pending",
        "attemptCount": 2,
        "nextAttemptAt": "2026-03-04T13:30:00Z",
        "lastStatusCode": 503,
        "lastError": "HTTP 503",
        "createdAt": "2026-03-04T13:06:07.891234Z",
        "completedAt": None,
        "bodyRemovedAt": None,
        "bodyRemovedReason": None,
        "attempts": former_attempts,
    }
    built = present_delivery(pending, _attempts())
    assert _wire(built) == _wire(former)
    assert DeliveryOut.model_validate(built).model_dump(mode="json") == built

    # Finished, its body removed: no next attempt; a test event with no attempt yet.
    failed = _delivery(
        state="failed", completed_at=LATER, body_removed_at=LATER, body_removed_reason="retention"
    )
    built = present_delivery(failed, _attempts())
    assert _wire(built) == _wire(
        former
        | {
            "state": "failed",
            "nextAttemptAt": None,
            "completedAt": "2026-03-04T13:30:00Z",
            "bodyRemovedAt": "2026-03-04T13:30:00Z",
            "bodyRemovedReason": "retention",
        }
    )
    test_event = _delivery(
        event_type="webhook.test", attempts=0, last_status_code=None, last_error=None
    )
    built = present_delivery(test_event, [])
    assert _wire(built) == _wire(
        former
        | {
            "eventType": "webhook.test",
            "attemptCount": 0,
            "lastStatusCode": None,
            "lastError": None,
            "attempts": [],
        }
    )
    assert DeliveryOut.model_validate(built).model_dump(mode="json") == built
