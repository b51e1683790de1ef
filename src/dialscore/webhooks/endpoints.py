"""Routes of /webhooks: subscriptions, their delivery log, replays and test events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.kit.clock import isoformat
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.envelope import Uuid
from dialscore.kit.http import StrictJsonRoute
from dialscore.kit.openapi import api_responses, request_example
from dialscore.kit.pagination import LimitQuery, PageQuery, PageRequest
from dialscore.webhooks import examples, service
from dialscore.webhooks import repository as repo
from dialscore.webhooks.schemas import (
    DeliveriesResponse,
    DeliveryResponse,
    RecoveredResponse,
    RecoverRequest,
    SubscriptionCreate,
    SubscriptionCreatedResponse,
    SubscriptionListResponse,
    SubscriptionResponse,
    SubscriptionRotatedResponse,
    SubscriptionUpdate,
    present_delivery,
    present_subscription,
)

router = APIRouter(prefix="/webhooks", tags=["webhooks"], route_class=StrictJsonRoute)


@router.post(
    "",
    status_code=201,
    response_model=SubscriptionCreatedResponse,
    responses=api_responses(400, 413, example=examples.CREATED_ANSWER, status=201),
    openapi_extra=request_example(examples.CREATE_REQUEST),
    summary="Create a subscription; its secret is shown only in this response",
)
async def create_webhook(
    body: SubscriptionCreate, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """Subscribes an HTTPS URL of a public host (D24) to `job.contact.scored` and/or
    `job.completed` (as `eventTypes`, or `events`). The answer carries the signing `secret`,
    shown only here: keep it to check each delivery's `X-Service-Signature`, or its
    Standard Webhooks `webhook-signature` (P120); lost, rotate it (P121) or delete the
    subscription and create another. The events are described in this document's
    webhooks."""
    settings = state.settings
    subscription, secret = await service.create_subscription(
        session,
        principal,
        body,
        server_secret=settings.resolved_secret_key,
        allow_private=settings.webhook_allow_private,
    )
    await session.commit()
    return {"data": present_subscription(subscription, secret=secret)}


@router.get(
    "",
    response_model=SubscriptionListResponse,
    responses=api_responses(example=examples.LIST_ANSWER),
    summary="List the user's subscriptions",
)
async def list_webhooks(principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
    """Every subscription of the key's user, active or not, without secrets (D20)."""
    subscriptions = await service.list_subscriptions(session, principal)
    return {"data": {"webhooks": [present_subscription(s) for s in subscriptions]}}


async def _set_status(
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
    webhook_id: str,
    status: str,
) -> dict[str, Any]:
    subscription = await service.set_status(session, principal, webhook_id, status)
    await session.commit()
    state.wakers.wake("dispatcher")
    return {"data": present_subscription(subscription)}


@router.post(
    "/{id}/active",
    response_model=SubscriptionResponse,
    responses=api_responses(400, 404, example=examples.ACTIVE_ANSWER),
    summary="Activate",
)
async def activate_webhook(
    id: Uuid, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """Events are delivered to the subscription again, and the deliveries that were pending
    when it was deactivated go out (P19). One turned off because every attempt failed for
    DIALSCORE_WEBHOOK_DISABLE_AFTER_SECONDS (P160) is active again with disabledAt and
    disabledReason cleared, its pending deliveries sent, and a new window. No body."""
    return await _set_status(principal, session, state, id, "active")


@router.post(
    "/{id}/inactive",
    response_model=SubscriptionResponse,
    responses=api_responses(400, 404, example=examples.INACTIVE_ANSWER),
    summary="Deactivate",
)
async def deactivate_webhook(
    id: Uuid, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """No events are sent to the subscription while it is inactive, none are kept for
    events that happen meanwhile (P19); its configuration is kept. No body."""
    return await _set_status(principal, session, state, id, "inactive")


@router.patch(
    "/{id}",
    response_model=SubscriptionResponse,
    responses=api_responses(400, 404, 413, example=examples.UPDATED_ANSWER),
    openapi_extra=request_example(examples.UPDATE_REQUEST),
    summary="Change a subscription's name, URL, events or rate in place",
)
async def update_webhook(
    id: Uuid,
    body: SubscriptionUpdate,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
) -> dict[str, Any]:
    """Extension (P140): changes the fields given (`name`, `url`, the event list as
    `eventTypes` or `events`, `rateLimit`); those left out keep their value, and so do the
    secret, the status and the delivery log. A new `url` is checked as on creation (https, a
    public host: D24, P75); the next delivery goes to it, those already pending included.
    `rateLimit` caps the deliveries per second to this subscription under the user's rate
    (P141); null removes it. Another key in the body, or none of these, answers 400. No
    secret in the answer."""
    subscription = await service.update_subscription(
        session,
        principal,
        id,
        body,
        allow_private=state.settings.webhook_allow_private,
    )
    answer = {"data": present_subscription(subscription)}
    await session.commit()
    return answer


@router.post(
    "/{id}/rotate-secret",
    response_model=SubscriptionRotatedResponse,
    responses=api_responses(400, 404, example=examples.ROTATED_ANSWER),
    summary="Replace the signing secret; the new one is shown only in this response",
)
async def rotate_webhook_secret(
    id: Uuid, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """Extension (P121): gives the subscription a new signing `secret`, shown only here.
    `X-Service-Signature` is made with the new secret from now on. For 24 hours (until
    `previousSecretExpiresAt`) each delivery's `webhook-signature` carries two signatures,
    by the new secret and by the one it replaced, so a receiver checking it can switch
    secrets without losing events; after that only the new one. Rotating again within the
    24 hours keeps only the newest previous secret (the one this call replaces). No body."""
    subscription, secret = await service.rotate_secret(
        session, principal, id, server_secret=state.settings.resolved_secret_key
    )
    body = {
        "data": {
            **present_subscription(subscription, secret=secret),
            "previousSecretExpiresAt": isoformat(service.previous_secret_until(subscription)),
        }
    }
    await session.commit()
    return body


@router.delete(
    "/{id}",
    status_code=204,
    response_class=Response,
    responses=api_responses(400, 404),
    summary="Delete permanently, with pending deliveries",
)
async def delete_webhook(id: Uuid, principal: CurrentPrincipal, session: WriteSession) -> None:
    """Removes the subscription and its pending deliveries at once; cannot be undone.
    Answers 204 with no body."""
    await service.delete_subscription(session, principal, id)
    await session.commit()


@router.get(
    "/{id}/deliveries",
    response_model=DeliveriesResponse,
    responses=api_responses(400, 404, example=examples.DELIVERIES_ANSWER),
    summary="The delivery log of a subscription, newest first",
)
async def list_deliveries(
    id: Uuid,
    principal: CurrentPrincipal,
    session: ReadSession,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
) -> dict[str, Any]:
    """Every delivery to the subscription, pending, delivered or failed, with each attempt's
    status code, duration and error: what to look at when a receiver misses events."""
    subscription = await service.subscription_of(session, principal, id)
    request = PageRequest(page, limit)
    deliveries, total, attempts = await repo.deliveries_page(
        session, subscription.id, offset=request.offset, limit=request.limit
    )
    return {
        "data": {
            "deliveries": [present_delivery(d, attempts[d.id]) for d in deliveries],
            "pagination": request.describe(total),
        }
    }


@router.post(
    "/{id}/deliveries/{deliveryId}/retry",
    status_code=202,
    response_model=DeliveryResponse,
    responses=api_responses(
        400,
        404,
        409,
        example=examples.RETRY_ANSWER,
        status=202,
        e409="The delivery's body was removed (past its retention, or with its job): it "
        "cannot be sent again (P131)",
    ),
    summary="Deliver again now, with the same envelope id",
)
async def retry_delivery(
    id: Uuid, deliveryId: Uuid, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """Sends a delivery again, delivered or failed, with the same envelope id and bytes,
    and starts a new retry window (P21). Answers 202: it goes out shortly. A delivery whose
    body was removed (`bodyRemovedAt`) answers 409: the job's contacts call still has the
    contacts it carried, while the job exists."""
    delivery = await service.retry_delivery(session, principal, id, deliveryId)
    attempts = await repo.attempts_of(session, delivery.id)
    body = {"data": present_delivery(delivery, attempts)}
    await session.commit()
    state.wakers.wake("dispatcher")
    return body


@router.post(
    "/{id}/recover",
    status_code=202,
    response_model=RecoveredResponse,
    responses=api_responses(400, 404, example=examples.RECOVER_ANSWER, status=202),
    openapi_extra=request_example(examples.RECOVER_REQUEST),
    summary="Deliver again every delivery of a time range that failed",
)
async def recover_deliveries(
    id: Uuid,
    body: RecoverRequest,
    principal: CurrentPrincipal,
    session: WriteSession,
    state: StateDep,
) -> dict[str, Any]:
    """Extension (P150): every delivery of the subscription created from `since` (included)
    to `until` (excluded; default now) that failed (its retries ran out, or it failed at
    once) is due again, with the same envelope id and bytes and a new retry window, as the
    replay of one delivery (P21). Delivered and pending deliveries are left as they are.
    Those whose body was removed (`bodyRemovedAt`) cannot be sent again: they stay failed
    and are counted in `skipped`. One call recovers at most 10,000, the earliest first;
    `more` says some are left: send the same request again. Answers 202: they go out
    shortly, at the subscription's rate."""
    recovery = await service.recover_deliveries(session, principal, id, body)
    await session.commit()
    state.wakers.wake("dispatcher")
    return {
        "data": {
            "recovered": recovery.recovered,
            "skipped": recovery.skipped,
            "more": recovery.more,
        }
    }


@router.post(
    "/{id}/test",
    status_code=202,
    response_model=DeliveryResponse,
    responses=api_responses(400, 404, example=examples.TEST_ANSWER, status=202),
    summary="Send a signed webhook.test event to the subscription's URL",
)
async def test_webhook(
    id: Uuid, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    """Queues a `webhook.test` event for the subscription, even an inactive one, signed like
    every event (P21): a way to check a receiver. Follow it in the delivery log."""
    delivery = await service.send_test_event(session, principal, id)
    body = {"data": present_delivery(delivery, [])}
    await session.commit()
    state.wakers.wake("dispatcher")
    return body
