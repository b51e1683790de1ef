"""Webhook subscriptions, the deliveries of events to them, and each delivery attempt."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from dialscore.kit.db import Base, UTCDateTime

# Finished deliveries that still have their body: what housekeeping looks through for bodies
# past their retention (P130). Pending deliveries, and those whose body is gone, are left out.
BODY_KEPT_WHEN_FINISHED = text("body_removed_at IS NULL AND completed_at IS NOT NULL")


class WebhookSubscription(Base):
    __tablename__ = "webhook_subscriptions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("clients.id"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(String(2048))
    event_types: Mapped[list[str]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    # Encrypted with a key derived from the server secret: a database dump alone does not
    # reveal it.
    secret_ciphertext: Mapped[str] = mapped_column(Text)
    # The secret before the last rotation, sealed the same way, and when it was replaced: for
    # a day after, deliveries' webhook-signature carries a signature by it too (P121).
    previous_secret_ciphertext: Mapped[str | None] = mapped_column(Text, nullable=True)
    secret_rotated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Deliveries per second to this subscription, below its user's rate (the lower wins);
    # None: the user's rate alone (P141).
    rate_limit: Mapped[float | None] = mapped_column(Float, nullable=True)
    # When the first failed attempt after its last success (or its creation, or its
    # reactivation) was made; None while its latest attempt succeeded (P160).
    failing_since: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # When it was turned off because every attempt failed for the window, and the last
    # failure's error; None unless so (cleared when it is activated, P160).
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    disabled_reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class WebhookDelivery(Base):
    """One event for one subscription, or one version 1 contact callback (``kind``
    ``callback``: no subscription, the contact's ``target_url``, the user's callback secret).
    Its id is the envelope id, the same on every retry.

    ``available_at`` is when it is due: when it was made, or the time of its next attempt.
    While an attempt is in flight, ``leased_until`` is the end of that attempt's lease; one
    whose worker died is taken again once its lease lapses, in the order it first fell due
    (P161).

    ``payload`` is None once the body was removed (``body_removed_at``, and why:
    ``retention``, ``job_erased``), never while the delivery is pending (P130, P132)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "state", "available_at"),
        Index("ix_webhook_deliveries_subscription", "subscription_id", "created_at"),
        Index("ix_webhook_deliveries_job", "job_id", "subscription_id", "state"),
        Index(
            "ix_webhook_deliveries_body_kept",
            "completed_at",
            sqlite_where=BODY_KEPT_WHEN_FINISHED,
            postgresql_where=BODY_KEPT_WHEN_FINISHED,
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # webhook | callback
    kind: Mapped[str] = mapped_column(String(16), default="webhook", server_default="webhook")
    subscription_id: Mapped[str | None] = mapped_column(
        ForeignKey("webhook_subscriptions.id", ondelete="CASCADE"), nullable=True
    )
    # Where a callback goes; webhooks go to their subscription's url.
    target_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    user_id: Mapped[str] = mapped_column(String(36))
    event_type: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    # pending → delivered | failed
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    available_at: Mapped[datetime] = mapped_column(UTCDateTime)
    leased_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    first_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    body_removed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # retention | job_erased
    body_removed_reason: Mapped[str | None] = mapped_column(String(16), nullable=True)


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_delivery", "delivery_id", "number"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    delivery_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE")
    )
    number: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duration_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    attempted_at: Mapped[datetime] = mapped_column(UTCDateTime)
