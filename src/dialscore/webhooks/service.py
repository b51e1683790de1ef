"""Webhook use cases: managing subscriptions, emitting events, replaying deliveries."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.accounts.schemas import Principal
from dialscore.kit.clock import new_id, require_uuid, utcnow
from dialscore.kit.crypto import SecretBox
from dialscore.kit.errors import BadRequest, Conflict, NotFound
from dialscore.kit.outbound import RefusedTarget, check_url
from dialscore.models import WebhookDelivery, WebhookSubscription
from dialscore.webhooks import new_secret
from dialscore.webhooks import repository as repo
from dialscore.webhooks.schemas import (
    CALLBACK,
    CALLBACK_EVENT,
    TEST_EVENT,
    WEBHOOK,
    SubscriptionCreate,
)

SECRET_PURPOSE = "webhook-secret"
# How long after a rotation the previous secret still signs webhook-signature (P121).
PREVIOUS_SECRET_KEPT = timedelta(hours=24)


def secret_box(server_secret: str) -> SecretBox:
    return SecretBox(server_secret, purpose=SECRET_PURPOSE)


async def create_subscription(
    session: AsyncSession,
    principal: Principal,
    request: SubscriptionCreate,
    *,
    server_secret: str,
    allow_private: bool,
) -> tuple[WebhookSubscription, str]:
    """A new subscription, with its URL normalised (P75), and its signing secret (shown only
    now)."""
    url = await checked_url(request.url, allow_private=allow_private)
    secret = new_secret()
    now = utcnow()
    subscription = WebhookSubscription(
        id=new_id(),
        client_id=principal.client_id,
        user_id=principal.user_id,
        name=request.name,
        url=url,
        event_types=request.event_types,
        status=request.status,
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
    """Sends a delivery again now, with the same envelope id, whatever its state; 409 once
    its body was removed (P131). A replay starts a new retry window."""
    subscription = await subscription_of(session, principal, subscription_id)
    delivery = await repo.delivery_of(
        session, subscription.id, require_uuid(delivery_id, "deliveryId")
    )
    if delivery is None:
        raise NotFound("delivery not found")
    if not await repo.replay(session, delivery.id, now=utcnow()):
        await session.refresh(delivery)
        raise Conflict(body_removed_problem(delivery))
    await session.refresh(delivery)
    return delivery
