"""A delivery claimed by a dispatcher: what sending it needs (its body, keys, rate keys and
lease), and what one attempt of it came to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from dialscore.webhooks import signing_key, standard_signature


@dataclass(frozen=True)
class Claimed:
    delivery_id: str
    key: str
    origin: str
    rate: float
    url: str
    secret: str
    body: bytes
    attempts: int
    first_attempt_at: datetime | None
    # The end of the lease the claim wrote: the dispatcher's token for renewing and handing
    # back the delivery while its attempt is not recorded.
    leased_until: datetime
    event_type: str
    # When the event was made, for the delivery latency metric.
    created_at: datetime | None = None
    # The keys of webhook-signature (P120): the secret's, and until ``previous_until`` the
    # one of the secret it replaced (P121). None: made from ``secret`` when sent.
    hmac_key: bytes | None = None
    previous_key: bytes | None = None
    previous_until: datetime | None = None
    # The subscription's own rate key and deliveries per second (P141), when it has one: a
    # send waits for room under it as well as under ``key``.
    endpoint_key: str | None = None
    endpoint_rate: float | None = None
    # The subscription it goes to; None for a version 1 callback.
    subscription_id: str | None = None

    @property
    def slots(self) -> list[tuple[str, float]]:
        """The rate keys a send is counted under: the subscription's own first (usually the
        tighter, so a send waiting for it holds nothing of its user's rate), then its
        user's."""
        own = []
        if self.endpoint_key is not None and self.endpoint_rate is not None:
            own.append((self.endpoint_key, self.endpoint_rate))
        return [*own, (self.key, self.rate)]

    def standard_headers(self, now: datetime) -> dict[str, str]:
        """The Standard Webhooks headers of an attempt made ``now``: its own timestamp, so
        its own signatures; the body is signed as it is sent (P106), not encoded again."""
        timestamp = int(now.timestamp())
        key = self.hmac_key if self.hmac_key is not None else signing_key(self.secret)
        signatures = [standard_signature(key, self.delivery_id, timestamp, self.body)]
        if (
            self.previous_key is not None
            and self.previous_until is not None
            and now < self.previous_until
        ):
            signatures.append(
                standard_signature(self.previous_key, self.delivery_id, timestamp, self.body)
            )
        return {
            "webhook-id": self.delivery_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": " ".join(signatures),
        }


@dataclass(frozen=True)
class Result:
    status_code: int | None
    error: str | None
    retry_after: str | None
    final: bool = False
