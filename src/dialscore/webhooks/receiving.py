"""What a receiver gets, as the OpenAPI document's webhooks describe it: the headers of a
delivery, how its answer is read, and the bodies of the events that are not a job's."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Depends, Header
from pydantic import BaseModel, Field

from dialscore.kit.envelope import Uuid
from dialscore.webhooks.schemas import SubscriptionOut

SignatureHeader = Annotated[
    str,
    Header(
        alias="X-Service-Signature",
        description="Base64(HMAC-SHA256(secret, raw request body)) under the subscription's "
        "secret (after a rotation, the new one at once: P121): compare it with your own "
        "computation over the raw bytes, and answer 401 when they differ",
    ),
]
UserAgentHeader = Annotated[
    str, Header(alias="User-Agent", description="Service-Webhooks/<version>")
]


def _standard_headers(
    webhook_id: Annotated[
        str,
        Header(
            alias="webhook-id",
            description="Standard Webhooks (P120): the envelope id, the same on every attempt",
        ),
    ],
    webhook_timestamp: Annotated[
        str,
        Header(
            alias="webhook-timestamp",
            description="Standard Webhooks: Unix seconds of this attempt (each attempt has "
            "its own); the libraries refuse one more than 5 minutes from the receiver's clock",
        ),
    ],
    webhook_signature: Annotated[
        str,
        Header(
            alias="webhook-signature",
            description="Standard Webhooks: `v1,` and Base64(HMAC-SHA256(key, "
            "`{webhook-id}.{webhook-timestamp}.{raw body}`)), where the key is the Base64 "
            "after `whsec_` decoded (a secret not of that form: its UTF-8 bytes). For 24 hours "
            "after a rotation, a second entry by the previous secret follows, space-separated "
            "(P121). Check it with `standardwebhooks` or `svix`",
        ),
    ],
) -> None:
    """The Standard Webhooks headers of a delivery, for the document only."""


# A dependency that declares the three headers in the document's events.
StandardHeaders = Annotated[None, Depends(_standard_headers)]
# A receiver's answers, as the dispatcher reads them (D23); any 2xx acknowledges an event.
RECEIVED = "Received, within 10 seconds; any 2xx acknowledges the event, which is not sent again"
RECEIVER_ANSWERS: dict[int | str, dict[str, Any]] = {
    401: {"description": "Signature refused: not retried"},
    "4XX": {"description": "Refused: not retried, except 408 and 429"},
    "5XX": {"description": "Failed: retried with exponential backoff for up to 3 days"},
}
ENVELOPE_ID = "Unique per event and subscription, the same on every retry: skip duplicates by it"
ENVELOPE_TIMESTAMP = "When the event happened, in Unix milliseconds"


class WebhookTestPayload(BaseModel):
    subscriptionId: Uuid
    message: str


class WebhookDisabledEvent(BaseModel):
    """Extension (P160): another subscription of the same owner was turned off, every
    attempt to it having failed for DIALSCORE_WEBHOOK_DISABLE_AFTER_SECONDS."""

    payload: SubscriptionOut = Field(
        description="The subscription turned off, as `GET /webhooks` shows it then: status "
        "inactive, with disabledAt and disabledReason"
    )
    eventType: Literal["webhook.disabled"]
    timestamp: int = Field(description=ENVELOPE_TIMESTAMP)
    apiVersion: Literal["v2"]
    id: Uuid = Field(description=ENVELOPE_ID)


class WebhookTestEvent(BaseModel):
    """Sent by ``POST /webhooks/{id}/test``, also to an inactive subscription (P21)."""

    payload: WebhookTestPayload
    eventType: Literal["webhook.test"]
    timestamp: int = Field(description=ENVELOPE_TIMESTAMP)
    apiVersion: Literal["v2"]
    id: Uuid = Field(description=ENVELOPE_ID)
