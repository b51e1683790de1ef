"""Webhook shapes: subscriptions, deliveries, the event envelope, and their documented models."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from dialscore.kit.clock import isoformat
from dialscore.kit.pagination import Pagination
from dialscore.kit.text import STORABLE_NOT_BLANK, StorableText
from dialscore.models import WebhookAttempt, WebhookDelivery, WebhookSubscription

CONTACT_SCORED = "job.contact.scored"
JOB_COMPLETED = "job.completed"
TEST_EVENT = "webhook.test"
# The event type of version 1 contact callbacks (D27): their own rate key, beside the events.
CALLBACK_EVENT = "contact.callback"
WEBHOOK = "webhook"
CALLBACK = "callback"
EVENT_TYPES = (CONTACT_SCORED, JOB_COMPLETED)
STATUSES = ("active", "inactive")
API_VERSION = "v2"


def present_subscription(
    subscription: WebhookSubscription, *, secret: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": subscription.id,
        "name": subscription.name,
        "url": subscription.url,
        "eventTypes": list(subscription.event_types),
        "triggers": list(subscription.event_types),
        "status": subscription.status,
        "createdAt": isoformat(subscription.created_at),
    }
    if secret is not None:
        out["secret"] = secret
    return out


def present_delivery(delivery: WebhookDelivery, attempts: list[WebhookAttempt]) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "eventType": delivery.event_type,
        "state": delivery.state,
        "attemptCount": delivery.attempts,
        "nextAttemptAt": isoformat(delivery.available_at) if delivery.state == "pending" else None,
        "lastStatusCode": delivery.last_status_code,
        "lastError": delivery.last_error,
        "createdAt": isoformat(delivery.created_at),
        "completedAt": isoformat(delivery.completed_at),
        "attempts": [
            {
                "attempt": a.number,
                "statusCode": a.status_code,
                "durationMs": a.duration_ms,
                "error": a.error,
                "attemptedAt": isoformat(a.attempted_at),
            }
            for a in attempts
        ],
    }


def envelope_bytes(delivery: WebhookDelivery) -> bytes:
    """The exact body of every attempt of a delivery: the same bytes, the same signature."""
    envelope = {
        "payload": delivery.payload,
        "eventType": delivery.event_type,
        "timestamp": delivery.timestamp_ms,
        "apiVersion": API_VERSION,
        "id": delivery.id,
    }
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()


def delivery_body(delivery: WebhookDelivery) -> bytes:
    """The bytes every attempt of a delivery sends: the event envelope of a webhook, the
    contact itself of a version 1 callback."""
    if delivery.kind == CALLBACK:
        return json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False).encode()
    return envelope_bytes(delivery)


# -- models ----------------------------------------------------------------------------


EventType = Literal["job.contact.scored", "job.completed"]
EventTypes = Annotated[list[EventType], Field(min_length=1)]


class SubscriptionCreate(BaseModel):
    name: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200), StorableText
    ] = Field(json_schema_extra={"pattern": STORABLE_NOT_BLANK})
    url: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2048)] = (
        Field(
            description="https URL of a public host (D24), without control characters, user "
            "name or password; stored and answered in its normalised form (P75)"
        )
    )
    eventTypes: EventTypes | None = Field(
        default=None, description="job.contact.scored and/or job.completed (or send 'events')"
    )
    events: EventTypes | None = Field(default=None, description="Same as eventTypes (D20)")
    status: Literal["active", "inactive"] = "active"

    @model_validator(mode="after")
    def _names_events(self) -> SubscriptionCreate:
        if self.eventTypes is None and self.events is None:
            raise PydanticCustomError(
                "events_missing",
                "eventTypes is required: a list of job.contact.scored, job.completed",
            )
        return self

    @property
    def event_types(self) -> list[str]:
        """The events asked for, each once, in the order given."""
        given = self.eventTypes if self.eventTypes is not None else self.events
        return list(dict.fromkeys(given or ()))


class SubscriptionOut(BaseModel):
    id: str
    name: str
    url: str
    eventTypes: list[str]
    triggers: list[str]
    status: str
    createdAt: str


class SubscriptionCreated(SubscriptionOut):
    secret: str = Field(description="The signing secret; shown only in this response")


class SubscriptionResponse(BaseModel):
    data: SubscriptionOut


class SubscriptionCreatedResponse(BaseModel):
    data: SubscriptionCreated


class SubscriptionList(BaseModel):
    webhooks: list[SubscriptionOut]


class SubscriptionListResponse(BaseModel):
    data: SubscriptionList


class AttemptOut(BaseModel):
    attempt: int
    statusCode: int | None
    durationMs: int
    error: str | None
    attemptedAt: str


class DeliveryOut(BaseModel):
    id: str = Field(description="The envelope id, the same on every attempt")
    eventType: str
    state: str = Field(description="pending, delivered or failed")
    attemptCount: int
    nextAttemptAt: str | None
    lastStatusCode: int | None
    lastError: str | None
    createdAt: str
    completedAt: str | None
    attempts: list[AttemptOut]


class DeliveryResponse(BaseModel):
    data: DeliveryOut


class DeliveriesPage(BaseModel):
    deliveries: list[DeliveryOut]
    pagination: Pagination


class DeliveriesResponse(BaseModel):
    data: DeliveriesPage
