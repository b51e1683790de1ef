"""Webhook use cases: managing subscriptions, emitting events, replaying deliveries."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.kit.clock import new_id, require_uuid, utcnow
from dialscore.kit.crypto import SecretBox
from dialscore.kit.errors import BadRequest, NotFound
from dialscore.kit.outbound import RefusedTarget, check_url
from dialscore.models import WebhookDelivery, WebhookSubscription
from dialscore.webhooks import repository as repo
from dialscore.webhooks.schemas import (
    CALLBACK,
    CALLBACK_EVENT,
    EVENT_TYPES,
    STATUSES,
    TEST_EVENT,
    WEBHOOK,
)

MAX_NAME = 200
MAX_URL = 2048
SECRET_PURPOSE = "webhook-secret"


def secret_box(server_secret: str) -> SecretBox:
    return SecretBox(server_secret, purpose=SECRET_PURPOSE)


def _event_types(body: dict[str, Any]) -> list[str]:
    given = body.get("eventTypes", body.get("events"))
    if given is None:
        raise BadRequest("eventTypes is required: a list of job.contact.scored, job.completed")
    if not isinstance(given, list) or not all(isinstance(e, str) for e in given):
        raise BadRequest("eventTypes must be a list of strings")
    if not given:
        raise BadRequest("eventTypes must name at least one event type")
    unknown = [e for e in given if e not in EVENT_TYPES]
    if unknown:
        raise BadRequest(f"unknown event type {unknown[0]!r}: allowed are {', '.join(EVENT_TYPES)}")
    return list(dict.fromkeys(given))


async def create_subscription(
    session: AsyncSession,
    principal: Principal,
    body: Any,
    *,
    server_secret: str,
    allow_private: bool,
) -> tuple[WebhookSubscription, str]:
    """A new subscription and its signing secret (shown only now)."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("name is required and must have at least 1 character")
    if len(name) > MAX_NAME:
        raise BadRequest(f"name is longer than {MAX_NAME} characters")
    url = body.get("url")
    if not isinstance(url, str) or not url.strip():
        raise BadRequest("url is required")
    url = url.strip()
    if len(url) > MAX_URL:
        raise BadRequest(f"url is longer than {MAX_URL} characters")
    try:
        await check_url(url, allow_private=allow_private)
    except RefusedTarget as exc:
        raise BadRequest(f"url is not allowed: {exc}") from None
    event_types = _event_types(body)
    status = body.get("status", "active")
    if status not in STATUSES:
        raise BadRequest("status must be active or inactive")
    secret = "whsec_" + secrets.token_urlsafe(32)
    now = utcnow()
    subscription = WebhookSubscription(
        id=new_id(),
        client_id=principal.client_id,
        user_id=principal.user_id,
        name=name.strip(),
        url=url,
        event_types=event_types,
        status=status,
        secret_ciphertext=secret_box(server_secret).seal(secret),
        created_at=now,
        updated_at=now,
    )
    repo.add_subscription(session, subscription)
    await session.flush()
    return subscription, secret


async def subscription_of(
    session: AsyncSession, principal: Principal, subscription_id: str
) -> WebhookSubscription:
    subscription = await repo.subscription_of_user(
        session, require_uuid(subscription_id, "id"), principal.user_id
    )
    if subscription is None:
        raise NotFound("webhook not found")
    return subscription


async def list_subscriptions(
    session: AsyncSession, principal: Principal
) -> Sequence[WebhookSubscription]:
    return await repo.subscriptions_of_user(session, principal.user_id)


async def set_status(
    session: AsyncSession, principal: Principal, subscription_id: str, status: str
) -> WebhookSubscription:
    subscription = await subscription_of(session, principal, subscription_id)
    if subscription.status != status:
        subscription.status = status
        subscription.updated_at = utcnow()
    return subscription


async def delete_subscription(
    session: AsyncSession, principal: Principal, subscription_id: str
) -> None:
    subscription = await subscription_of(session, principal, subscription_id)
    await repo.delete_subscription(session, subscription.id)


# -- events ---------------------------------------------------------------------------------------


def delivery_row(
    *,
    subscription_id: str | None,
    user_id: str,
    event_type: str,
    payload: dict[str, Any],
    job_id: str | None,
    now: datetime,
    kind: str = WEBHOOK,
    target_url: str | None = None,
) -> dict[str, Any]:
    return {
        "id": new_id(),
        "kind": kind,
        "subscription_id": subscription_id,
        "target_url": target_url,
        "user_id": user_id,
        "event_type": event_type,
        "job_id": job_id,
        "payload": payload,
        "timestamp_ms": int(now.timestamp() * 1000),
        "state": "pending",
        "attempts": 0,
        "available_at": now,
        "created_at": now,
    }


async def emit(
    session: AsyncSession,
    *,
    user_id: str,
    event_type: str,
    payloads: Iterable[dict[str, Any]],
    job_id: str | None,
) -> int:
    """Writes one delivery per payload and active subscription of the user listening to the
    event, in the caller's transaction (the state change that caused the events).

    ``payloads`` is consumed only when someone listens, so a generator costs nothing then."""
    listeners = await repo.active_listeners(session, user_id, event_type)
    if not listeners:
        return 0
    now = utcnow()
    rows = [
        delivery_row(
            subscription_id=sid,
            user_id=user_id,
            event_type=event_type,
            payload=payload,
            job_id=job_id,
            now=now,
        )
        for payload in payloads
        for sid in listeners
    ]
    await repo.insert_deliveries(session, rows)
    return len(rows)


async def queue_callbacks(
    session: AsyncSession,
    *,
    user_id: str,
    job_id: str,
    callbacks: Iterable[tuple[str, dict[str, Any]]],
) -> int:
    """Writes one callback delivery per (url, body) in the caller's transaction: a version 1
    contact posted to its own callback URL, through the same engine as webhooks (D27)."""
    now = utcnow()
    rows = [
        delivery_row(
            subscription_id=None,
            user_id=user_id,
            event_type=CALLBACK_EVENT,
            payload=body,
            job_id=job_id,
            now=now,
            kind=CALLBACK,
            target_url=url,
        )
        for url, body in callbacks
    ]
    await repo.insert_deliveries(session, rows)
    return len(rows)


async def send_test_event(
    session: AsyncSession, principal: Principal, subscription_id: str
) -> WebhookDelivery:
    subscription = await subscription_of(session, principal, subscription_id)
    now = utcnow()
    row = delivery_row(
        subscription_id=subscription.id,
        user_id=principal.user_id,
        event_type=TEST_EVENT,
        payload={"subscriptionId": subscription.id, "message": "a test event from dialscore"},
        job_id=None,
        now=now,
    )
    delivery = WebhookDelivery(**row)
    session.add(delivery)
    await session.flush()
    return delivery


async def retry_delivery(
    session: AsyncSession, principal: Principal, subscription_id: str, delivery_id: str
) -> WebhookDelivery:
    """Sends a delivery again now, with the same envelope id, whatever its state."""
    subscription = await subscription_of(session, principal, subscription_id)
    delivery = await repo.delivery_of(
        session, subscription.id, require_uuid(delivery_id, "deliveryId")
    )
    if delivery is None:
        raise NotFound("delivery not found")
    now = utcnow()
    delivery.state = "pending"
    delivery.available_at = now
    delivery.completed_at = None
    # A replay starts a new retry window.
    delivery.first_attempt_at = None
    return delivery
