"""Webhook shapes: subscriptions, deliveries, the event envelope, and their documented models."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from dialscore.kit.clock import isoformat
from dialscore.kit.envelope import NOT_BLANK, Timestamp, Uuid
from dialscore.kit.pagination import Pagination
from dialscore.kit.text import STORABLE_NOT_BLANK, StorableText
from dialscore.models import WebhookAttempt, WebhookDelivery, WebhookSubscription

CONTACT_SCORED = "job.contact.scored"
JOB_COMPLETED = "job.completed"
TEST_EVENT = "webhook.test"
# Extension (P160): a subscription of the same owner was turned off, every attempt to it
# having failed for DIALSCORE_WEBHOOK_DISABLE_AFTER_SECONDS.
WEBHOOK_DISABLED = "webhook.disabled"
# The event type of version 1 contact callbacks (D27): their own rate key, beside the events.
CALLBACK_EVENT = "contact.callback"
WEBHOOK = "webhook"
CALLBACK = "callback"
EVENT_TYPES = (CONTACT_SCORED, JOB_COMPLETED, WEBHOOK_DISABLED)
STATUSES = ("active", "inactive")
API_VERSION = "v2"


def present_subscription(
    subscription: WebhookSubscription, *, secret: str | None = None
) -> dict[str, Any]:
    """A subscription as ``SubscriptionOut`` (``SubscriptionCreated`` with its secret)."""
    fields: dict[str, Any] = {
        "id": subscription.id,
        "name": subscription.name,
        "url": subscription.url,
        "eventTypes": list(subscription.event_types),
        "triggers": list(subscription.event_types),
        "status": subscription.status,
        "createdAt": isoformat(subscription.created_at),
        "rateLimit": subscription.rate_limit,
        "disabledAt": isoformat(subscription.disabled_at),
        "disabledReason": subscription.disabled_reason,
    }
    if secret is None:
        return _wire(SubscriptionOut.model_validate(fields))
    return _wire(SubscriptionCreated.model_validate({**fields, "secret": secret}))


def present_delivery(delivery: WebhookDelivery, attempts: list[WebhookAttempt]) -> dict[str, Any]:
    """A delivery of the log as ``DeliveryOut``, with its attempts."""
    out = DeliveryOut.model_validate(
        {
            "id": delivery.id,
            "eventType": delivery.event_type,
            "state": delivery.state,
            "attemptCount": delivery.attempts,
            "nextAttemptAt": (
                isoformat(delivery.available_at) if delivery.state == "pending" else None
            ),
            "lastStatusCode": delivery.last_status_code,
            "lastError": delivery.last_error,
            "createdAt": isoformat(delivery.created_at),
            "completedAt": isoformat(delivery.completed_at),
            "bodyRemovedAt": isoformat(delivery.body_removed_at),
            "bodyRemovedReason": delivery.body_removed_reason,
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
    )
    return _wire(out)


def _wire(model: BaseModel) -> dict[str, Any]:
    """A response body's record as it goes on the wire: the JSON form of its model."""
    return model.model_dump(mode="json", by_alias=True)


def delivery_body(
    *, delivery_id: str, kind: str, event_type: str, payload_json: str, timestamp_ms: int
) -> bytes:
    """The bytes every attempt of a delivery sends, the same on each (and so its signature):
    the event envelope of a webhook, the contact itself of a version 1 callback. The payload
    is spliced in as it is stored (JSON text), not decoded and encoded again."""
    if kind == CALLBACK:
        return payload_json.encode()
    rest = {
        "eventType": event_type,
        "timestamp": int(timestamp_ms),
        "apiVersion": API_VERSION,
        "id": delivery_id,
    }
    tail = json.dumps(rest, separators=(",", ":"), ensure_ascii=False)
    return f'{{"payload":{payload_json},{tail[1:]}'.encode()


# -- models ----------------------------------------------------------------------------


EventType = TypeAliasType(
    "EventType", Literal["job.contact.scored", "job.completed", "webhook.disabled"]
)
EventTypes = Annotated[list[EventType], Field(min_length=1)]
WebhookStatus = TypeAliasType("WebhookStatus", Literal["active", "inactive"])
# Both are stripped first: a blank one is refused (documented by ``NOT_BLANK``).
_NAME = StringConstraints(strip_whitespace=True, min_length=1, max_length=200)
_URL = StringConstraints(strip_whitespace=True, min_length=1, max_length=2048)
# A subscription's own rate, deliveries per second (P141): a JSON number (not a string, not a
# boolean), from one every ten seconds to the most any plan allows.
MIN_RATE_LIMIT = 0.1
MAX_RATE_LIMIT = 1000
RateLimit = Annotated[float, Field(strict=True, ge=MIN_RATE_LIMIT, le=MAX_RATE_LIMIT)]
RATE_LIMIT_DESCRIPTION = (
    "Extension (P141): at most this many deliveries per second to this subscription, its "
    "events together, on top of the user's webhook rate (the lower wins); 0.1 to 1000, "
    "below 1 one delivery every 1/rateLimit seconds"
)


def _document_event_list(schema: dict[str, Any]) -> None:
    """The document asks for ``eventTypes`` (P79): "one of two fields" is not a schema a
    generated client can be made from. ``events`` is still accepted in its place (D20)."""
    properties = schema["properties"]
    properties["eventTypes"] = {
        "type": "array",
        "items": {"$ref": "#/components/schemas/EventType"},
        "minItems": 1,
        "description": properties["eventTypes"]["description"],
    }
    properties["events"]["deprecated"] = True
    schema["required"].append("eventTypes")


class SubscriptionCreate(BaseModel):
    model_config = ConfigDict(json_schema_extra=_document_event_list)

    name: Annotated[str, _NAME, StorableText] = Field(
        description="A label for the owner's reference",
        json_schema_extra={"pattern": STORABLE_NOT_BLANK},
    )
    url: Annotated[str, _URL] = Field(
        description="https URL of a public host (D24), without control characters, user name "
        "or password; stored and answered in its normalised form (P75)",
        json_schema_extra={"pattern": NOT_BLANK},
    )
    eventTypes: EventTypes | None = Field(
        default=None,
        description="The events to receive: job.contact.scored, job.completed, and "
        "webhook.disabled (an extension, P160: another of your webhooks was turned off)",
    )
    events: EventTypes | None = Field(
        default=None, description="Accepted in place of eventTypes (D20)"
    )
    status: WebhookStatus = Field(default="active", description="The initial status")
    rateLimit: RateLimit | None = Field(
        default=None, description=RATE_LIMIT_DESCRIPTION + "; left out, the user's rate alone"
    )

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


# The fields an update may change, as named in its body (P140).
UPDATABLE = ("name", "url", "eventTypes", "events", "rateLimit")


class SubscriptionUpdate(BaseModel):
    """Extension (P140): the fields of a subscription to change; those left out keep their
    value. At least one is given; another key answers 400."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, _NAME, StorableText] | None = Field(
        default=None,
        description="A new label",
        json_schema_extra={"pattern": STORABLE_NOT_BLANK},
    )
    url: Annotated[str, _URL] | None = Field(
        default=None,
        description="A new URL, checked as on creation: https URL of a public host (D24), "
        "normalised (P75). The next delivery goes to it, pending ones included",
        json_schema_extra={"pattern": NOT_BLANK},
    )
    eventTypes: EventTypes | None = Field(
        default=None,
        description="The new list of events: job.contact.scored, job.completed, "
        "webhook.disabled (P160). Events already queued for the subscription are still "
        "delivered",
    )
    events: EventTypes | None = Field(
        default=None,
        description="Accepted in place of eventTypes (D20); both given, they must agree",
    )
    rateLimit: RateLimit | None = Field(
        default=None, description=RATE_LIMIT_DESCRIPTION + "; null removes it"
    )

    @model_validator(mode="after")
    def _changes_something(self) -> SubscriptionUpdate:
        given = [name for name in UPDATABLE if name in self.model_fields_set]
        if not given:
            raise PydanticCustomError(
                "nothing_to_update",
                "request body names nothing to change: give one or more of name, url, "
                "eventTypes, rateLimit",
            )
        for name in given:
            if name != "rateLimit" and getattr(self, name) is None:
                raise PydanticCustomError(
                    "null_field", f"'{name}' must not be null: leave it out to keep it"
                )
        if (
            self.eventTypes is not None
            and self.events is not None
            and set(self.eventTypes) != set(self.events)
        ):
            raise PydanticCustomError(
                "events_disagree",
                "eventTypes and events differ: send the event list once, as eventTypes",
            )
        return self

    @property
    def event_types(self) -> list[str] | None:
        """The events asked for, each once, in the order given; None to keep them."""
        given = self.eventTypes if self.eventTypes is not None else self.events
        return None if given is None else list(dict.fromkeys(given))


class SubscriptionOut(BaseModel):
    id: Uuid
    name: str
    url: str
    eventTypes: list[EventType]
    triggers: list[EventType] = Field(description="The same list as eventTypes (D20)")
    status: WebhookStatus
    createdAt: Timestamp
    rateLimit: float | None = Field(
        description=RATE_LIMIT_DESCRIPTION + "; null when the user's rate alone applies"
    )
    disabledAt: Timestamp | None = Field(
        description="Extension (P160): when the subscription was turned off (status "
        "inactive) because every attempt to it failed for "
        "DIALSCORE_WEBHOOK_DISABLE_AFTER_SECONDS (5 days by default) after its last success; "
        "null otherwise, and again once it is activated. Its pending deliveries wait, and go "
        "out when it is activated",
    )
    disabledReason: str | None = Field(
        description="Extension (P160): the last failure before it was turned off, in words "
        "(such as `receiver answered 503`); null unless disabledAt is set",
    )


class SubscriptionCreated(SubscriptionOut):
    secret: str = Field(description="The signing secret; shown only in this response")


class SubscriptionRotated(SubscriptionCreated):
    secret: str = Field(description="The new signing secret; shown only in this response")
    previousSecretExpiresAt: Timestamp = Field(
        description="Extension (P121): until then webhook-signature carries a signature by "
        "the secret this one replaced too; X-Service-Signature uses the new one at once"
    )


class SubscriptionResponse(BaseModel):
    data: SubscriptionOut


class SubscriptionCreatedResponse(BaseModel):
    data: SubscriptionCreated


class SubscriptionRotatedResponse(BaseModel):
    data: SubscriptionRotated


class SubscriptionList(BaseModel):
    webhooks: list[SubscriptionOut]


class SubscriptionListResponse(BaseModel):
    data: SubscriptionList


BodyRemovedReason = TypeAliasType("BodyRemovedReason", Literal["retention", "job_erased"])


class AttemptOut(BaseModel):
    attempt: int
    statusCode: int | None
    durationMs: int
    error: str | None
    attemptedAt: Timestamp


class DeliveryOut(BaseModel):
    id: Uuid = Field(description="The envelope id, the same on every attempt")
    eventType: Literal["job.contact.scored", "job.completed", "webhook.test", "webhook.disabled"]
    state: Literal["pending", "delivered", "failed"]
    attemptCount: int
    nextAttemptAt: Timestamp | None = Field(description="When a pending delivery goes out next")
    lastStatusCode: int | None
    lastError: str | None
    createdAt: Timestamp
    completedAt: Timestamp | None
    bodyRemovedAt: Timestamp | None = Field(
        description="Extension (P130): when the delivery's body (the event it sends) was "
        "removed, null while it is kept. A finished delivery keeps it for "
        "DIALSCORE_WEBHOOK_RETENTION_DAYS (30 by default) after it finished; the delivery, its "
        "times and its attempts stay in the log, but it can no longer be sent again (P131)"
    )
    bodyRemovedReason: BodyRemovedReason | None = Field(
        description="Why the body was removed: `retention` (its days after it finished had "
        "passed) or `job_erased` (its job was deleted, P132); null while it is kept"
    )
    attempts: list[AttemptOut]


class DeliveryResponse(BaseModel):
    data: DeliveryOut


class DeliveriesPage(BaseModel):
    deliveries: list[DeliveryOut]
    pagination: Pagination


class DeliveriesResponse(BaseModel):
    data: DeliveriesPage


def _instant(value: str, field: str) -> datetime:
    """An ISO 8601 date and time with its offset (``Z`` or ``+02:00``), as UTC."""
    try:
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            return parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # not a time; out of range once in UTC
        pass
    raise PydanticCustomError(
        "instant",
        f"{field} must be an ISO 8601 date and time with its offset, such as 2025-06-03T14:30:00Z",
    )


class RecoverRequest(BaseModel):
    """Which failed deliveries to send again (P150): those created in [since, until)."""

    model_config = ConfigDict(extra="forbid")

    since: Timestamp = Field(
        description="The earliest creation time of a delivery to recover (included), "
        "ISO 8601 with its offset"
    )
    until: Timestamp | None = Field(
        default=None,
        description="The creation time up to which deliveries are recovered (excluded); "
        "default now",
    )

    @model_validator(mode="after")
    def _ordered(self) -> RecoverRequest:
        since = _instant(self.since, "since")
        if self.until is not None and _instant(self.until, "until") < since:
            raise PydanticCustomError("until_before_since", "until must not be before since")
        return self

    @property
    def bounds(self) -> tuple[datetime, datetime | None]:
        """``since`` and ``until`` (None: now), as UTC."""
        until = None if self.until is None else _instant(self.until, "until")
        return _instant(self.since, "since"), until


class Recovered(BaseModel):
    recovered: int = Field(description="How many failed deliveries are due again")
    skipped: int = Field(
        description="How many failed deliveries of the range were left failed: their body was "
        "removed (P130, P132), there is nothing to send"
    )
    more: bool = Field(
        description="Whether failed deliveries of the range are left to recover beyond this "
        "call's bound (P150): send the same request again"
    )


class RecoveredResponse(BaseModel):
    data: Recovered
