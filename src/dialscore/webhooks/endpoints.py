"""Routes of /webhooks: subscriptions, their delivery log, replays and test events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from dialscore.accounts.dependencies import CurrentPrincipal
from dialscore.kit.deps import ReadSession, StateDep, WriteSession
from dialscore.kit.http import StrictJsonRoute
from dialscore.kit.openapi import api_responses
from dialscore.kit.pagination import LimitQuery, PageQuery, PageRequest
from dialscore.webhooks import repository as repo
from dialscore.webhooks import service
from dialscore.webhooks.schemas import (
    DeliveriesResponse,
    DeliveryResponse,
    SubscriptionCreate,
    SubscriptionCreatedResponse,
    SubscriptionListResponse,
    SubscriptionResponse,
    present_delivery,
    present_subscription,
)

router = APIRouter(prefix="/webhooks", tags=["webhooks"], route_class=StrictJsonRoute)


@router.post(
    "",
    status_code=201,
    response_model=SubscriptionCreatedResponse,
    responses=api_responses(400, 413),
    summary="Create a subscription; its secret is shown only in this response",
)
async def create_webhook(
    body: SubscriptionCreate, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
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


@router.get("", response_model=SubscriptionListResponse, responses=api_responses(), summary="List")
async def list_webhooks(principal: CurrentPrincipal, session: ReadSession) -> dict[str, Any]:
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
    responses=api_responses(400, 404),
    summary="Activate",
)
async def activate_webhook(
    id: str, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    return await _set_status(principal, session, state, id, "active")


@router.post(
    "/{id}/inactive",
    response_model=SubscriptionResponse,
    responses=api_responses(400, 404),
    summary="Deactivate",
)
async def deactivate_webhook(
    id: str, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    return await _set_status(principal, session, state, id, "inactive")


@router.delete(
    "/{id}",
    status_code=204,
    response_class=Response,
    responses=api_responses(400, 404),
    summary="Delete permanently, with pending deliveries",
)
async def delete_webhook(id: str, principal: CurrentPrincipal, session: WriteSession) -> None:
    await service.delete_subscription(session, principal, id)
    await session.commit()


@router.get(
    "/{id}/deliveries",
    response_model=DeliveriesResponse,
    responses=api_responses(400, 404),
    summary="The delivery log of a subscription, newest first",
)
async def list_deliveries(
    id: str,
    principal: CurrentPrincipal,
    session: ReadSession,
    page: PageQuery = 1,
    limit: LimitQuery = 100,
) -> dict[str, Any]:
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
    responses=api_responses(400, 404),
    summary="Deliver again now, with the same envelope id",
)
async def retry_delivery(
    id: str, deliveryId: str, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    delivery = await service.retry_delivery(session, principal, id, deliveryId)
    attempts = await repo.attempts_of(session, delivery.id)
    body = {"data": present_delivery(delivery, attempts)}
    await session.commit()
    state.wakers.wake("dispatcher")
    return body


@router.post(
    "/{id}/test",
    status_code=202,
    response_model=DeliveryResponse,
    responses=api_responses(400, 404),
    summary="Send a signed webhook.test event to the subscription's URL",
)
async def test_webhook(
    id: str, principal: CurrentPrincipal, session: WriteSession, state: StateDep
) -> dict[str, Any]:
    delivery = await service.send_test_event(session, principal, id)
    body = {"data": present_delivery(delivery, [])}
    await session.commit()
    state.wakers.wake("dispatcher")
    return body
