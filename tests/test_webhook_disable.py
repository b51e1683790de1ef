"""A dead endpoint turned off (P160), on both databases, with real receivers on 127.0.0.1 and
an injected clock for the window (lowered to an hour): a subscription whose every attempt
fails becomes inactive with disabledAt and disabledReason, another subscription of its owner
that asked for webhook.disabled gets the event, signed, and once the receiver is back and
the subscription activated its pending deliveries all go out; a success starts the window
again; the dashboard says why it was turned off."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from structlog.testing import capture_logs

from dialscore.config import Settings
from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.db import Database
from dialscore.models import WebhookDelivery, WebhookSubscription
from dialscore.webhooks import health
from dialscore.webhooks.claims import AttemptRecord
from tests.fakes import Answer, Received, running_receiver
from tests.support import Tenant, settle
from tests.test_api_document import assert_keeps_to, document
from tests.test_webhook_subscriptions import (
    HOOKS,
    assert_signed,
    barrier,
    create,
    deliveries,
    emit_held_back,
    listed,
    release,
    wait_for,
)
from tests.web_forms import sign_in_user

WINDOW = timedelta(hours=1)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Receivers on 127.0.0.1 allowed; a failed attempt retried 0.2 s later, many times (so
    that retries do not run out during a test); the window lowered to an hour."""
    return settings.model_copy(
        update={
            "webhook_allow_private": True,
            "webhook_retry_schedule": ",".join(["0.2"] * 40),
            "webhook_disable_after_seconds": WINDOW.total_seconds(),
        }
    )


class Clock:
    """The health check's clock (``health.utcnow``): the real time moved by ``ahead``."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return utcnow() + self.ahead


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    injected = Clock()
    monkeypatch.setattr(health, "utcnow", injected)
    return injected


async def subscription_row(db: Database, subscription_id: str) -> WebhookSubscription:
    async with db.read() as session:
        row = await session.get(WebhookSubscription, subscription_id)
    assert row is not None
    return row


async def states_of(db: Database, subscription_id: str) -> dict[str, str]:
    async with db.read() as session:
        rows = await session.execute(
            select(WebhookDelivery.id, WebhookDelivery.state).where(
                WebhookDelivery.subscription_id == subscription_id
            )
        )
        return {delivery_id: state for delivery_id, state in rows.all()}


async def wait_for_row(
    db: Database, subscription_id: str, condition: Any, what: str
) -> WebhookSubscription:
    """Polls the subscription's row until ``condition(row)`` holds (bounded)."""
    found: list[WebhookSubscription] = []

    async def check() -> bool:
        found[:] = [await subscription_row(db, subscription_id)]
        return bool(condition(found[0]))

    for _ in range(1000):
        if await check():
            return found[0]
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# -- end to end -----------------------------------------------------------------------------------


async def test_a_dead_endpoint_is_turned_off_announced_and_loses_nothing(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant, clock: Clock
) -> None:
    down = [True]

    def dead(request: Received, index: int) -> Answer:
        return Answer(500) if down[0] else Answer(200)

    with running_receiver(dead) as endpoint, running_receiver() as watcher:
        target = await create(api, tenant, endpoint.url, name="CRM", events=["job.contact.scored"])
        # Another subscription of the same owner that asked for webhook.disabled.
        told = await create(api, tenant, watcher.url, name="alerts", events=["webhook.disabled"])
        sid = target["id"]
        pending = await emit_held_back(db, tenant, sid, 3)
        await release(db, sid)

        # Failures within the window: it stays active, failing since the first of them.
        row = await wait_for_row(db, sid, lambda r: r.failing_since is not None, "a failure")
        first_failure = row.failing_since
        assert row.status == "active" and row.disabled_at is None
        assert watcher.received == []

        # An hour and more later by the health check's clock, the next failure turns it off.
        clock.ahead = WINDOW + timedelta(minutes=1)
        row = await wait_for_row(db, sid, lambda r: r.status == "inactive", "turned off")
        assert row.failing_since == first_failure
        assert row.disabled_at is not None and row.disabled_at - utcnow() > WINDOW - timedelta(
            minutes=1
        )
        assert row.disabled_reason == "receiver answered 500"
        (shown,) = [w for w in await listed(api, tenant) if w["id"] == sid]
        assert shown == {
            **{k: v for k, v in target.items() if k != "secret"},
            "status": "inactive",
            "disabledAt": isoformat(row.disabled_at),
            "disabledReason": "receiver answered 500",
        }

        # The other subscription is told, once, signed, with the subscription as shown.
        await wait_for(lambda: len(watcher.received) >= 1, "the webhook.disabled event")
        clock.ahead = timedelta(0)
        await barrier(app, api, tenant)
        (event,) = [assert_signed(r, told["secret"]) for r in watcher.received]
        assert event["eventType"] == "webhook.disabled"
        assert event["payload"] == shown
        schema = document()["webhooks"]["webhook.disabled"]["post"]["requestBody"]["content"][
            "application/json"
        ]["schema"]
        assert_keeps_to(schema, event, "webhook.disabled as sent")

        # Nothing more is sent to it, and nothing of it is lost: all still pending.
        tried = len(endpoint.received)
        await barrier(app, api, tenant)
        assert len(endpoint.received) == tried
        assert await states_of(db, sid) == dict.fromkeys(pending, "pending")

        # One of them waits for a retry an hour away: activating makes it due at once too.
        async with db.unit_of_work() as session:
            await session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == min(pending))
                .values(available_at=utcnow() + timedelta(hours=1))
            )

        # The receiver is back and it is activated: every pending delivery goes out.
        down[0] = False
        on = await api.post(f"{HOOKS}/{sid}/active", headers=tenant.headers)
        assert on.status_code == 200, on.text
        assert on.json()["data"]["status"] == "active"
        assert on.json()["data"]["disabledAt"] is None
        assert on.json()["data"]["disabledReason"] is None
        await settle(app)
        delivered = {
            assert_signed(r, target["secret"])["id"]
            for r in endpoint.received
            if r.json()["eventType"] == "job.contact.scored"
        }
    assert delivered == pending
    assert await states_of(db, sid) == dict.fromkeys(pending, "delivered")
    page = await deliveries(api, tenant, sid)
    assert {d["id"] for d in page["deliveries"]} == pending
    row = await subscription_row(db, sid)
    assert (row.status, row.failing_since, row.disabled_at, row.disabled_reason) == (
        "active",
        None,
        None,
        None,
    )


async def test_a_success_ends_the_failing_and_nothing_is_turned_off(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant, clock: Clock
) -> None:
    def once_down(request: Received, index: int) -> Answer:
        return Answer(503) if index == 0 else Answer(200)

    with running_receiver(once_down) as endpoint:
        target = await create(api, tenant, endpoint.url, events=["job.contact.scored"])
        sid = target["id"]
        (delivery,) = await emit_held_back(db, tenant, sid, 1)
        await release(db, sid)
        await wait_for(lambda: len(endpoint.received) >= 2, "the failure and the retry")
        await settle(app)
    assert await states_of(db, sid) == {delivery: "delivered"}
    row = await subscription_row(db, sid)
    assert (row.status, row.failing_since, row.disabled_at) == ("active", None, None)


async def test_a_subscription_can_ask_for_webhook_disabled(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    made = await create(
        api, tenant, events=["job.completed", "webhook.disabled"], status="inactive"
    )
    assert made["eventTypes"] == ["job.completed", "webhook.disabled"]
    assert made["disabledAt"] is None and made["disabledReason"] is None
    changed = await api.patch(
        f"{HOOKS}/{made['id']}", json={"eventTypes": ["webhook.disabled"]}, headers=tenant.headers
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["eventTypes"] == ["webhook.disabled"]
    refused = await api.post(
        HOOKS,
        json={"name": "n", "url": "https://93.184.216.34/hook", "eventTypes": ["webhook.test"]},
        headers=tenant.headers,
    )
    assert refused.status_code == 400


# -- the window, by the injected clock ------------------------------------------------------------


def attempt(
    subscription_id: str | None, at: datetime, *, ok: bool, error: str = "receiver answered 502"
) -> AttemptRecord:
    """A recorded attempt of ``subscription_id`` made ``at``: delivered, or failed and due
    again."""
    return AttemptRecord(
        delivery_id=str(uuid.uuid4()),
        number=1,
        status_code=200 if ok else 502,
        duration_ms=5,
        error=None if ok else error,
        attempted_at=at,
        state="delivered" if ok else "pending",
        available_at=at,
        first_attempt_at=at,
        completed_at=at if ok else None,
        subscription_id=subscription_id,
    )


async def test_the_window_counts_from_the_first_failure_after_the_last_success(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    async def note(*records: AttemptRecord, now: datetime) -> list[str]:
        async with db.unit_of_work() as session:
            return await health.note_attempts(session, records, disable_after=WINDOW, now=now)

    async def failing_since(subscription_id: str) -> datetime | None:
        return (await subscription_row(db, subscription_id)).failing_since

    with running_receiver() as watcher:
        told = await create(api, tenant, watcher.url, name="alerts", events=["webhook.disabled"])
        sid = (await create(api, tenant, "https://93.184.216.34/hook", name="CRM"))["id"]
        t0 = utcnow() - timedelta(days=1)
        minutes = [t0 + timedelta(minutes=m) for m in range(200)]

        # A failure starts the window; later failures within it keep its start.
        assert await note(attempt(sid, minutes[0], ok=False), now=minutes[0]) == []
        assert await failing_since(sid) == minutes[0]
        assert await note(attempt(sid, minutes[30], ok=False), now=minutes[30]) == []
        assert await failing_since(sid) == minutes[0]
        # A success ends it; a quiet hour after it turns nothing off.
        assert await note(attempt(sid, minutes[40], ok=True), now=minutes[40]) == []
        assert await failing_since(sid) is None
        assert await note(attempt(sid, minutes[110], ok=False), now=minutes[110]) == []
        assert await failing_since(sid) == minutes[110]
        # In one group: failures, a success, failures: the window starts after the success.
        group = (
            attempt(sid, minutes[120], ok=False),
            attempt(sid, minutes[121], ok=True),
            attempt(sid, minutes[122], ok=False),
            attempt(sid, minutes[123], ok=False),
        )
        assert await note(*group, now=minutes[123]) == []
        assert await failing_since(sid) == minutes[122]
        # A version 1 callback (no subscription) counts for nothing.
        assert await note(attempt(None, minutes[130], ok=True), now=minutes[130]) == []
        assert await failing_since(sid) == minutes[122]
        # Still within the hour from minute 122.
        assert await note(attempt(sid, minutes[181], ok=False), now=minutes[181]) == []
        assert (await subscription_row(db, sid)).status == "active"

        # An hour after minute 122: turned off, with the last failure, logged at WARNING.
        with capture_logs() as logs:
            last = attempt(sid, minutes[182], ok=False, error="timed out after 10 s")
            assert await note(last, now=minutes[182]) == [sid]
        row = await subscription_row(db, sid)
        assert (row.status, row.disabled_at, row.disabled_reason) == (
            "inactive",
            minutes[182],
            "timed out after 10 s",
        )
        assert row.updated_at == minutes[182]
        (warning,) = [entry for entry in logs if entry["log_level"] == "warning"]
        assert warning["subscription_id"] == sid and warning["reason"] == "timed out after 10 s"
        assert warning["notified"] == 1
        # Failures recorded after it (another worker's) turn nothing off again, tell nobody.
        assert await note(attempt(sid, minutes[183], ok=False), now=minutes[183]) == []
        await settle(app)
        events = [assert_signed(r, told["secret"]) for r in watcher.received]
    assert [e["eventType"] for e in events] == ["webhook.disabled"]
    assert events[0]["payload"]["id"] == sid
    assert events[0]["payload"]["disabledAt"] == isoformat(minutes[182])
    assert events[0]["payload"]["disabledReason"] == "timed out after 10 s"


async def test_activation_clears_the_window_and_the_reason(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    sid = (await create(api, tenant, "https://93.184.216.34/hook", status="inactive"))["id"]
    async with db.unit_of_work() as session:
        row = await session.get(WebhookSubscription, sid)
        assert row is not None
        row.failing_since = row.disabled_at = utcnow() - timedelta(hours=2)
        row.disabled_reason = "receiver answered 500"
    on = await api.post(f"{HOOKS}/{sid}/active", headers=tenant.headers)
    assert on.status_code == 200, on.text
    row = await subscription_row(db, sid)
    assert (row.status, row.failing_since, row.disabled_at, row.disabled_reason) == (
        "active",
        None,
        None,
        None,
    )
    off = await api.post(f"{HOOKS}/{sid}/inactive", headers=tenant.headers)
    assert off.status_code == 200
    assert off.json()["data"]["disabledAt"] is None


# -- the dashboard --------------------------------------------------------------------------------


async def test_the_webhook_page_says_why_it_was_turned_off(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    sid = (await create(api, tenant, "https://93.184.216.34/hook", name="CRM"))["id"]
    await sign_in_user(api, db, tenant.user_id)
    page = await api.get(f"/app/webhooks/{sid}")
    assert page.status_code == 200
    assert "This webhook was turned off" not in page.text

    when = utcnow() - timedelta(hours=3)
    async with db.unit_of_work() as session:
        failing = (attempt(sid, when - WINDOW, ok=False), attempt(sid, when, ok=False))
        await health.note_attempts(session, failing[:1], disable_after=WINDOW, now=when - WINDOW)
        await health.note_attempts(session, failing[1:], disable_after=WINDOW, now=when)
    page = await api.get(f"/app/webhooks/{sid}")
    assert page.status_code == 200
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.text))
    stamp = when.strftime("%Y-%m-%d %H:%M:%S")
    assert (
        f"It was turned off on {stamp} UTC because every delivery to it failed for 1 hour. "
        "The last failure: receiver answered 502."
    ) in text
    assert "the deliveries waiting for it are sent when you turn it on again" in text
    assert f'action="/app/webhooks/{sid}/active"' in page.text
    for internal in ("failing_since", "disabled_reason", "disabledAt", "P160"):
        assert internal not in page.text
    listing = await api.get("/app/webhooks")
    assert "(turned off: every delivery failed)" in listing.text
