"""The webhooks pages: the user's subscriptions, creating one (its secret shown once),
activating, deactivating, deleting, and each subscription's page: its delivery log with
redelivery and test events, and rotating its secret (the new one shown once). Every change
goes through the services the API's webhook endpoints call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from dialscore.dashboard.web import PREFIX, FormUser, PageNotFound, SignedIn, render, sent_once
from dialscore.dashboard.webhook_health import (
    RELOAD_SECONDS,
    endpoint_health,
    window_words,
)
from dialscore.idempotency import answer_once
from dialscore.kit.clock import utcnow
from dialscore.kit.deps import ReadSession, StateDep, WriteSession, get_state
from dialscore.kit.errors import ApiError, Conflict
from dialscore.kit.pagination import MAX_PAGE, PageRequest
from dialscore.models import WebhookSubscription
from dialscore.signin.schemas import WebUser
from dialscore.webhooks import repository as repo
from dialscore.webhooks import service
from dialscore.webhooks.schemas import (
    CONTACT_SCORED,
    JOB_COMPLETED,
    MAX_RATE_LIMIT,
    MIN_RATE_LIMIT,
    SubscriptionCreate,
    SubscriptionUpdate,
)

router = APIRouter()

DELIVERIES_PER_PAGE = 20
NO_EVENTS = "Choose at least one event."
RATE_PROBLEM = (
    f"Enter deliveries per second from {MIN_RATE_LIMIT:g} to {MAX_RATE_LIMIT:g}, or leave it "
    "empty for your account's rate alone."
)
EVENT_LABELS = {
    "job.contact.scored": "Each contact scored (job.contact.scored)",
    "job.completed": "Each job completed (job.completed)",
    "webhook.disabled": "An endpoint was turned off (webhook.disabled)",
}
# What a new webhook's form has ticked: the job events; webhook.disabled only when chosen.
DEFAULT_EVENTS = (CONTACT_SCORED, JOB_COMPLETED)
NOTICES = {
    "created": "The webhook was created.",
    "activated": "The webhook is active: events are delivered to it.",
    "deactivated": "The webhook is inactive: no events are sent to it.",
    "deleted": "The webhook was deleted.",
    "test": "A test event is on its way. Reload this page to see its attempts.",
    "redelivered": "The delivery is being sent again. Reload this page to see the attempt.",
    "body-removed": "That delivery's body was removed: it cannot be delivered again.",
    "edited": "The webhook was changed. The next delivery uses what you saved.",
    "edited-again": "This form was already sent: the webhook was changed then. Nothing was "
    "changed again.",
}
SENT_AGAIN = (
    "This form was already sent: the webhook “{name}” was created then and its secret shown "
    "once. Nothing was created again."
)
ROTATED = (
    "The webhook has a new signing secret. X-Service-Signature uses it from now on; until "
    "{until} UTC webhook-signature carries signatures by the new and the previous secret."
)
ROTATED_AGAIN = (
    "This form was already sent: the secret of the webhook “{name}” was replaced then and the "
    "new one shown once. Nothing was replaced again."
)


@dataclass
class CreateForm:
    """What the person typed in the create form, and what is wrong with it, field by field."""

    name: str = ""
    url: str = ""
    events: list[str] = field(default_factory=lambda: list(DEFAULT_EVENTS))
    # Deliveries per second as typed; empty for none (P141).
    rate: str = ""
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class EditForm:
    """The edit form of a subscription's page (P140): its values as stored, or as typed with
    what is wrong with them."""

    name: str = ""
    url: str = ""
    events: list[str] = field(default_factory=list)
    # Deliveries per second as typed; empty for none (P141).
    rate: str = ""
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, subscription: WebhookSubscription) -> EditForm:
        rate = subscription.rate_limit
        return cls(
            name=subscription.name,
            url=subscription.url,
            events=list(subscription.event_types),
            rate="" if rate is None else f"{rate:g}",
        )


async def _owned(session: AsyncSession, user: WebUser, subscription_id: str) -> WebhookSubscription:
    """The user's subscription; anything else (another user's, a malformed id) is not found."""
    try:
        return await service.subscription_of(session, user.principal, subscription_id)
    except ApiError:
        raise PageNotFound() from None


async def _list_page(
    request: Request,
    user: WebUser,
    session: AsyncSession,
    *,
    form: CreateForm | None = None,
    created: WebhookSubscription | None = None,
    secret: str | None = None,
    notice: str = "",
    status_code: int = 200,
) -> HTMLResponse:
    subscriptions = await service.list_subscriptions(session, user.principal)
    return render(
        request,
        "webhooks.html",
        user,
        status_code=status_code,
        subscriptions=subscriptions,
        form=form or CreateForm(),
        event_labels=EVENT_LABELS,
        created=created,
        secret=secret,
        notice=notice,
    )


@router.get("/webhooks", response_class=HTMLResponse)
async def list_webhooks(
    request: Request, user: SignedIn, session: ReadSession, done: str | None = None
) -> HTMLResponse:
    return await _list_page(request, user, session, notice=NOTICES.get(done or "", ""))


def _field_errors(exc: ValidationError) -> dict[str, str]:
    errors: dict[str, str] = {}
    for error in exc.errors():
        where = str(error["loc"][0]) if error["loc"] else ""
        if where == "name":
            errors.setdefault("name", "Give the webhook a name (at most 200 characters).")
        elif where == "url":
            errors.setdefault("url", "Enter the URL that receives the events.")
        elif where == "rateLimit":
            errors.setdefault("rate", RATE_PROBLEM)
        else:
            errors.setdefault("events", NO_EVENTS)
    return errors


@router.post("/webhooks", response_class=HTMLResponse)
async def create_webhook(
    request: Request, user: FormUser, session: WriteSession, state: StateDep
) -> HTMLResponse:
    sent = await request.form()
    name, url = sent.get("name"), sent.get("url")
    events = [e for e in sent.getlist("events") if isinstance(e, str)]
    rate = sent.get("rate")
    form = CreateForm(
        name=name if isinstance(name, str) else "",
        url=url if isinstance(url, str) else "",
        events=events,
        rate=rate.strip() if isinstance(rate, str) else "",
    )
    try:
        body = SubscriptionCreate.model_validate(
            {
                "name": form.name,
                "url": form.url,
                "eventTypes": events or None,
                "rateLimit": _typed_rate(form.rate),
            }
        )
    except ValidationError as exc:
        form.errors = _field_errors(exc)
        if not events:  # the model names missing events only once the fields are valid
            form.errors.setdefault("events", NO_EVENTS)
        return await _list_page(request, user, session, form=form, status_code=400)
    made: list[tuple[WebhookSubscription, str]] = []

    async def create() -> dict[str, Any]:
        subscription, secret = await service.create_subscription(
            session,
            user.principal,
            body,
            server_secret=state.settings.resolved_secret_key,
            allow_private=state.settings.webhook_allow_private,
        )
        made.append((subscription, secret))
        return {"id": subscription.id, "name": subscription.name}

    once = sent_once(sent, user, "app/webhooks", state.settings)
    try:
        first, again = await answer_once(session, once, now=utcnow(), answer=create)
    except ApiError as exc:
        await session.rollback()
        form.errors = {"url": _url_problem(exc.message)}
        return await _list_page(request, user, session, form=form, status_code=400)
    if again:
        return await _list_page(request, user, session, notice=SENT_AGAIN.format(**first))
    ((subscription, secret),) = made
    # The secret is in this answer only: the page is not redirected, and it is never stored
    # in the clear.
    page = await _list_page(
        request, user, session, created=subscription, secret=secret, notice=NOTICES["created"]
    )
    page.headers["Cache-Control"] = "no-store"
    return page


def _typed_rate(typed: str) -> float | str | None:
    """A rate as typed, for the model to check: None for none, a number, or the text itself
    (which the model refuses)."""
    if not typed:
        return None
    try:
        return float(typed)
    except ValueError:
        return typed


def _url_problem(message: str) -> str:
    reason = message.removeprefix("url is not allowed: ").strip()
    return f"This URL cannot receive webhooks: {reason}." if reason else "This URL is refused."


async def _set_status(
    user: WebUser, session: AsyncSession, state: StateDep, webhook_id: str, status: str
) -> RedirectResponse:
    try:
        await service.set_status(session, user.principal, webhook_id, status)
    except ApiError:
        raise PageNotFound() from None
    await session.commit()
    state.wakers.wake("dispatcher")
    done = "activated" if status == "active" else "deactivated"
    return RedirectResponse(f"{PREFIX}/webhooks?done={done}", status_code=303)


@router.post("/webhooks/{webhook_id}/active")
async def activate_webhook(
    webhook_id: str, user: FormUser, session: WriteSession, state: StateDep
) -> RedirectResponse:
    return await _set_status(user, session, state, webhook_id, "active")


@router.post("/webhooks/{webhook_id}/inactive")
async def deactivate_webhook(
    webhook_id: str, user: FormUser, session: WriteSession, state: StateDep
) -> RedirectResponse:
    return await _set_status(user, session, state, webhook_id, "inactive")


@router.get("/webhooks/{webhook_id}/delete", response_class=HTMLResponse)
async def confirm_delete(
    request: Request, webhook_id: str, user: SignedIn, session: ReadSession
) -> HTMLResponse:
    subscription = await _owned(session, user, webhook_id)
    return render(request, "webhook_delete.html", user, subscription=subscription)


@router.post("/webhooks/{webhook_id}/delete")
async def delete_webhook(
    webhook_id: str, user: FormUser, session: WriteSession
) -> RedirectResponse:
    try:
        await service.delete_subscription(session, user.principal, webhook_id)
    except ApiError:
        raise PageNotFound() from None
    await session.commit()
    return RedirectResponse(f"{PREFIX}/webhooks?done=deleted", status_code=303)


async def _webhook_page(
    request: Request,
    user: WebUser,
    session: AsyncSession,
    subscription: WebhookSubscription,
    *,
    page: int = 1,
    notice: str = "",
    secret: str | None = None,
    edit: EditForm | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    paging = PageRequest(page, DELIVERIES_PER_PAGE)
    deliveries, total, attempts = await repo.deliveries_page(
        session, subscription.id, offset=paging.offset, limit=paging.limit
    )
    until = service.previous_secret_until(subscription)
    health = await endpoint_health(session, subscription.id)
    return render(
        request,
        "webhook.html",
        user,
        status_code=status_code,
        subscription=subscription,
        edit=edit or EditForm.of(subscription),
        event_labels=EVENT_LABELS,
        deliveries=deliveries,
        attempts=attempts,
        health=health,
        disable_window=window_words(get_state(request).settings.webhook_disable_after),
        reload_seconds=RELOAD_SECONDS,
        pagination=paging.describe(total),
        notice=notice,
        secret=secret,
        previous_until=until if until is not None and utcnow() < until else None,
    )


@router.get("/webhooks/{webhook_id}", response_class=HTMLResponse)
async def delivery_log(
    request: Request,
    webhook_id: str,
    user: SignedIn,
    session: ReadSession,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    done: str | None = None,
) -> HTMLResponse:
    subscription = await _owned(session, user, webhook_id)
    return await _webhook_page(
        request, user, session, subscription, page=page, notice=NOTICES.get(done or "", "")
    )


@router.post("/webhooks/{webhook_id}/rotate-secret", response_class=HTMLResponse)
async def rotate_secret(
    request: Request, webhook_id: str, user: FormUser, session: WriteSession, state: StateDep
) -> HTMLResponse:
    """Replaces the secret and shows the new one on this answer only: not redirected, and a
    reload (the same one-time token) replaces nothing again (P91)."""
    subscription = await _owned(session, user, webhook_id)
    made: list[str] = []

    async def rotate() -> dict[str, Any]:
        _, secret = await service.rotate_secret(
            session,
            user.principal,
            subscription.id,
            server_secret=state.settings.resolved_secret_key,
        )
        made.append(secret)
        return {"id": subscription.id, "name": subscription.name}

    once = sent_once(await request.form(), user, "app/webhooks/rotate-secret", state.settings)
    first, again = await answer_once(session, once, now=utcnow(), answer=rotate)
    if again:
        notice = ROTATED_AGAIN.format(**first)
        return await _webhook_page(request, user, session, subscription, notice=notice)
    until = service.previous_secret_until(subscription)
    notice = ROTATED.format(until=until.strftime("%Y-%m-%d %H:%M:%S") if until else "—")
    # The secret is in this answer only, never stored in the clear.
    page = await _webhook_page(request, user, session, subscription, notice=notice, secret=made[0])
    page.headers["Cache-Control"] = "no-store"
    return page


@router.post("/webhooks/{webhook_id}/edit", response_class=HTMLResponse)
async def edit_webhook(
    request: Request, webhook_id: str, user: FormUser, session: WriteSession, state: StateDep
) -> Response:
    """Changes the name, URL and events in place (P140), through the service the API's
    PATCH calls; errors are shown beside their fields with what was typed kept. The form's
    one-time token makes a second send change nothing again (P91)."""
    subscription = await _owned(session, user, webhook_id)
    sent = await request.form()
    name, url = sent.get("name"), sent.get("url")
    events = [e for e in sent.getlist("events") if isinstance(e, str)]
    rate = sent.get("rate")
    form = EditForm(
        name=name if isinstance(name, str) else "",
        url=url if isinstance(url, str) else "",
        events=events,
        rate=rate.strip() if isinstance(rate, str) else "",
    )
    fields: dict[str, Any] = {
        "name": form.name,
        "url": form.url,
        "rateLimit": _typed_rate(form.rate),
    }
    if events:
        fields["eventTypes"] = events
    try:
        body = SubscriptionUpdate.model_validate(fields)
    except ValidationError as exc:
        form.errors = _field_errors(exc)
    if not events:
        form.errors.setdefault("events", NO_EVENTS)
    if form.errors:
        return await _webhook_page(request, user, session, subscription, edit=form, status_code=400)

    async def edit() -> dict[str, Any]:
        await service.update_subscription(
            session,
            user.principal,
            subscription.id,
            body,
            allow_private=state.settings.webhook_allow_private,
        )
        return {"id": subscription.id}

    once = sent_once(sent, user, "app/webhooks/edit", state.settings)
    try:
        _, again = await answer_once(session, once, now=utcnow(), answer=edit)
    except ApiError as exc:
        await session.rollback()
        form.errors = {"url": _url_problem(exc.message)}
        subscription = await _owned(session, user, webhook_id)
        return await _webhook_page(request, user, session, subscription, edit=form, status_code=400)
    done = "edited-again" if again else "edited"
    return RedirectResponse(f"{PREFIX}/webhooks/{webhook_id}?done={done}", status_code=303)


@router.post("/webhooks/{webhook_id}/test")
async def send_test_event(
    webhook_id: str, user: FormUser, session: WriteSession, state: StateDep
) -> RedirectResponse:
    try:
        await service.send_test_event(session, user.principal, webhook_id)
    except ApiError:
        raise PageNotFound() from None
    await session.commit()
    state.wakers.wake("dispatcher")
    return RedirectResponse(f"{PREFIX}/webhooks/{webhook_id}?done=test", status_code=303)


@router.post("/webhooks/{webhook_id}/deliveries/{delivery_id}/retry")
async def redeliver(
    webhook_id: str, delivery_id: str, user: FormUser, session: WriteSession, state: StateDep
) -> RedirectResponse:
    try:
        await service.retry_delivery(session, user.principal, webhook_id, delivery_id)
    except Conflict:
        # Its body was removed meanwhile (P131): the page says so.
        return RedirectResponse(
            f"{PREFIX}/webhooks/{webhook_id}?done=body-removed", status_code=303
        )
    except ApiError:
        raise PageNotFound() from None
    await session.commit()
    state.wakers.wake("dispatcher")
    return RedirectResponse(f"{PREFIX}/webhooks/{webhook_id}?done=redelivered", status_code=303)
