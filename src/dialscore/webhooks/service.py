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
    RecoverRequest,
    SubscriptionCreate,
    SubscriptionUpdate,
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
        rate_limit=request.rateLimit,
        secret_ciphertext=secret_box(server_secret).seal(secret),
        created_at=now,
        updated_at=now,
    )
    repo.add_subscription(session, subscription)
    await session.flush()
    return subscription, secret


async def checked_url(url: str, *, allow_private: bool) -> str:
    """A subscription URL as stored (P75), or 400 saying why it is refused (D24)."""
    try:
        return await check_url(url, allow_private=allow_private)
    except RefusedTarget as exc:
        raise BadRequest(f"url is not allowed: {exc}") from None


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
    """Activates or deactivates a subscription. Activating one clears what its endpoint's
    failures left (P160): ``failing_since`` (its window starts again at its next failure)
    and, for one turned off by them, ``disabled_at`` and ``disabled_reason``; its pending
    deliveries, those waiting for a retry included, are due at once (P160): activating says
    the receiver is back."""
    subscription = await subscription_of(session, principal, subscription_id)
    if subscription.status != status:
        now = utcnow()
        subscription.status = status
        subscription.updated_at = now
        if status == "active":
            subscription.failing_since = None
            subscription.disabled_at = None
            subscription.disabled_reason = None
            await repo.due_at_once(session, subscription.id, now=now)
    return subscription


async def update_subscription(
    session: AsyncSession,
    principal: Principal,
    subscription_id: str,
    request: SubscriptionUpdate,
    *,
    allow_private: bool,
) -> WebhookSubscription:
    """Changes the fields ``request`` gives, in place (P140): the URL checked and normalised
    as on creation; the secret, status and delivery log kept. Deliveries pending for it go
    to its URL as it is when they are claimed, so to the new one."""
    subscription = await subscription_of(session, principal, subscription_id)
    url = None
    if request.url is not None:
        url = await checked_url(request.url, allow_private=allow_private)
    if request.name is not None:
        subscription.name = request.name
    if url is not None:
        subscription.url = url
    event_types = request.event_types
    if event_types is not None:
        subscription.event_types = event_types
    if "rateLimit" in request.model_fields_set:
        subscription.rate_limit = request.rateLimit
    subscription.updated_at = utcnow()
    await session.flush()
    return subscription


async def rotate_secret(
    session: AsyncSession, principal: Principal, subscription_id: str, *, server_secret: str
) -> tuple[WebhookSubscription, str]:
    """Gives the subscription a new signing secret (shown only now) and keeps the one it
    replaces, sealed, to sign webhook-signature beside it for ``PREVIOUS_SECRET_KEPT`` (P121).
    A secret older than that is dropped, even when its day is not over: only the newest
    previous secret is kept."""
    subscription = await subscription_of(session, principal, subscription_id)
    secret = new_secret()
    await repo.rotate_secret(
        session, subscription.id, sealed=secret_box(server_secret).seal(secret), now=utcnow()
    )
    await session.refresh(subscription)
    return subscription, secret


def previous_secret_until(subscription: WebhookSubscription) -> datetime | None:
    """Until when the subscription's previous secret signs too; None when it has none."""
    if subscription.secret_rotated_at is None or subscription.previous_secret_ciphertext is None:
        return None
    return subscription.secret_rotated_at + PREVIOUS_SECRET_KEPT


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


async def listened_to(session: AsyncSession, *, user_id: str, event_type: str) -> bool:
    """Whether an active subscription of the user listens to the event: what is worked out
    only for its payloads need not be when none does."""
    return bool(await repo.active_listeners(session, user_id, event_type))


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


# The most deliveries one recovery makes due again (P150): a bounded transaction; the rest
# of a larger range is left for the same request again (``more``).
RECOVER_LIMIT = 10_000


async def recover_deliveries(
    session: AsyncSession,
    principal: Principal,
    subscription_id: str,
    request: RecoverRequest,
    *,
    limit: int | None = None,
) -> repo.Recovery:
    """Makes the subscription's failed deliveries created in [since, until) due again, with
    their envelope ids and a new retry window, as a replay does one (P21, P150); those whose
    body was removed stay failed and are counted as skipped (P131)."""
    subscription = await subscription_of(session, principal, subscription_id)
    now = utcnow()
    since, until = request.bounds
    return await repo.recover_failed(
        session,
        subscription.id,
        since=since,
        until=until or now,
        now=now,
        limit=limit or RECOVER_LIMIT,
    )


def body_removed_problem(delivery: WebhookDelivery) -> str:
    """Why a delivery whose body was removed cannot be sent again (P131)."""
    removed = delivery.body_removed_at
    if delivery.body_removed_reason == repo.RETENTION and removed and delivery.completed_at:
        days = (removed - delivery.completed_at).days
        when = f"on {removed:%Y-%m-%d}, {days} day{'s' if days != 1 else ''} after it finished"
    elif delivery.body_removed_reason == repo.JOB_ERASED:
        when = "when its job was erased"
    else:
        when = "after it finished"
    return f"the body of this delivery was removed {when}: it cannot be sent again"
