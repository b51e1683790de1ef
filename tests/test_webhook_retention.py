"""Delivery bodies that do not outlive their use (P130, P131), on both databases: housekeeping
removes the body of every delivery that finished longer ago than the retention, a batch per
transaction, and nothing else; the log keeps the deliveries and their attempts and says the
body was removed; a delivery without its body is not sent again. The clock is injected."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import WebhookAttempt, WebhookDelivery
from dialscore.webhooks import repository as repo
from dialscore.worker.housekeeping import Housekeeping
from tests.support import V2, Tenant, assert_error, state_of
from tests.web_forms import sign_in_user

NOW = utcnow().replace(microsecond=0)
SECOND = timedelta(seconds=1)
# A public address literal: accepted without DNS, and never called (the subscription is
# inactive, so nothing pending goes out).
PUBLIC_URL = "https://93.184.216.34/hook"


async def inactive_subscription(api: httpx.AsyncClient, tenant: Tenant) -> str:
    body = {
        "name": "crm",
        "url": PUBLIC_URL,
        "eventTypes": ["job.contact.scored"],
        "status": "inactive",
    }
    created = await api.post(f"{V2}/webhooks", json=body, headers=tenant.headers)
    assert created.status_code == 201, created.text
    webhook_id: str = created.json()["data"]["id"]
    return webhook_id


def delivery(
    tenant: Tenant, webhook_id: str, name: str, *, state: str, finished: datetime | None
) -> WebhookDelivery:
    made = (finished or NOW) - timedelta(hours=1)
    return WebhookDelivery(
        id=str(uuid.uuid4()),
        kind="webhook",
        subscription_id=webhook_id,
        user_id=tenant.user_id,
        event_type="job.contact.scored",
        job_id=None,
        payload={"contact": {"firstName": name}, "job": {"id": None, "type": None}},
        timestamp_ms=int(made.timestamp() * 1000),
        state=state,
        attempts=0 if state == "pending" else 1,
        available_at=NOW + timedelta(days=1) if state == "pending" else made,
        first_attempt_at=None if state == "pending" else made,
        last_status_code=None if state == "pending" else 200,
        created_at=made,
        completed_at=finished,
    )


async def bodies(db: Database) -> dict[str, dict[str, Any] | None]:
    """Each delivery's payload by the first name it carried (kept in ``last_error``)."""
    async with db.read() as session:
        rows = (await session.scalars(select(WebhookDelivery))).all()
    return {str(r.last_error): r.payload for r in rows}


async def test_bodies_past_retention_go_and_the_log_keeps_the_rest(
    app: FastAPI, api: httpx.AsyncClient, settings: Settings, tenant: Tenant
) -> None:
    db = state_of(app).db
    retention = timedelta(days=settings.webhook_retention_days)
    assert retention == timedelta(days=30)
    webhook_id = await inactive_subscription(api, tenant)
    finished = {
        # Finished at or before the retention's start: their bodies go.
        "delivered-old": ("delivered", NOW - retention - timedelta(days=3)),
        "failed-old": ("failed", NOW - retention - SECOND),
        "delivered-at-the-limit": ("delivered", NOW - retention),
        # Finished since: kept.
        "delivered-recent": ("delivered", NOW - retention + SECOND),
        # Pending, however old: kept (its retries, or its inactive subscription, may still
        # send it).
        "pending-old": ("pending", None),
    }
    rows = {
        name: delivery(tenant, webhook_id, name, state=state, finished=when)
        for name, (state, when) in finished.items()
    }
    rows["pending-old"].created_at = NOW - 3 * retention
    async with db.unit_of_work() as session:
        for name, row in rows.items():
            row.last_error = name
            session.add(row)
        await session.flush()
        for row in rows.values():
            if row.state != "pending":
                session.add(
                    WebhookAttempt(
                        delivery_id=row.id,
                        number=1,
                        status_code=200 if row.state == "delivered" else 410,
                        duration_ms=12,
                        error=None,
                        attempted_at=row.created_at,
                    )
                )

    # Two per transaction: three bodies past retention take two batches.
    housekeeping = Housekeeping(db, settings, clock=lambda: NOW, body_batch=2)
    forgotten = await housekeeping.forget_expired()
    assert forgotten["webhook_bodies"] == 3

    kept = await bodies(db)
    assert {name for name, payload in kept.items() if payload is None} == {
        "delivered-old",
        "failed-old",
        "delivered-at-the-limit",
    }
    assert kept["pending-old"] == {
        "contact": {"firstName": "pending-old"},
        "job": {"id": None, "type": None},
    }
    assert kept["delivered-recent"] is not None
    async with db.read() as session:
        after = {r.id: r for r in (await session.scalars(select(WebhookDelivery))).all()}
        attempts = (await session.scalars(select(WebhookAttempt))).all()
    assert len(after) == 5 and len(attempts) == 4
    for name in ("delivered-old", "failed-old", "delivered-at-the-limit"):
        row = after[rows[name].id]
        assert (row.body_removed_at, row.body_removed_reason) == (NOW, "retention")
        assert row.state == finished[name][0] and row.attempts == 1  # the rest is as it was

    # The log shows every delivery and attempt; those without a body say since when, and why.
    answer = await api.get(f"{V2}/webhooks/{webhook_id}/deliveries", headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    log = {d["lastError"]: d for d in answer.json()["data"]["deliveries"]}
    assert len(log) == 5
    for name, entry in log.items():
        removed = name in ("delivered-old", "failed-old", "delivered-at-the-limit")
        assert entry["bodyRemovedReason"] == ("retention" if removed else None), name
        assert (entry["bodyRemovedAt"] is not None) is removed, name
        assert len(entry["attempts"]) == (0 if name == "pending-old" else 1)
    assert datetime.fromisoformat(log["failed-old"]["bodyRemovedAt"]) == NOW

    # Sending one again: 409 for a body removed, saying when; 202 for one still kept.
    def retry(name: str) -> Any:
        return api.post(
            f"{V2}/webhooks/{webhook_id}/deliveries/{rows[name].id}/retry", headers=tenant.headers
        )

    message = assert_error(await retry("delivered-old"), 409)
    assert message == (
        f"the body of this delivery was removed on {NOW:%Y-%m-%d}, 33 days after it finished: "
        "it cannot be sent again"
    )
    assert (await retry("delivered-recent")).status_code == 202
    # Pending again, for a subscription that is inactive: held until tomorrow, so that the
    # test's end does not wait for it.
    async with db.unit_of_work() as session:
        held = await session.get(WebhookDelivery, rows["delivered-recent"].id)
        assert held is not None and held.state == "pending" and held.payload is not None
        held.available_at = NOW + timedelta(days=1)
    async with db.read() as session:
        again = await session.get(WebhookDelivery, rows["delivered-old"].id)
    assert again is not None and again.state == "delivered" and again.payload is None

    # Once more: nothing left to remove (the one sent again is pending: kept).
    assert (await housekeeping.forget_expired())["webhook_bodies"] == 0

    # The web app's log says the same, and offers no redelivery of a body removed.
    await sign_in_user(api, db, tenant.user_id)
    page = await api.get(f"/app/webhooks/{webhook_id}")
    assert page.status_code == 200, page.text
    assert page.text.count("Body removed") == 3
    assert "keeps what it sent for 30 days" in page.text
    assert "keeps what it sent for 33 days" in page.text
    assert len(re.findall(r"/deliveries/[0-9a-f-]{36}/retry", page.text)) == 2
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None
    sent = await api.post(
        f"/app/webhooks/{webhook_id}/deliveries/{rows['failed-old'].id}/retry",
        data={"csrf_token": token[1]},
    )
    assert sent.status_code == 303
    assert sent.headers["location"].endswith("?done=body-removed")
    notice = await api.get(sent.headers["location"])
    assert "body was removed: it cannot be delivered again." in notice.text


async def test_a_delivery_sent_again_meanwhile_keeps_its_body(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    """Between finding the bodies past retention and removing them, one of them is sent
    again (pending once more): its body stays."""
    db = state_of(app).db
    webhook_id = await inactive_subscription(api, tenant)
    old = NOW - timedelta(days=40)
    first = delivery(tenant, webhook_id, "first", state="delivered", finished=old)
    second = delivery(tenant, webhook_id, "second", state="failed", finished=old)
    async with db.unit_of_work() as session:
        session.add_all([first, second])
    before = NOW - timedelta(days=30)
    async with db.unit_of_work() as session:
        found = await repo.bodies_past_retention(session, finished_before=before, limit=10)
    assert sorted(found) == sorted([first.id, second.id])
    async with db.unit_of_work() as session:
        assert await repo.replay(session, second.id, now=NOW)
    async with db.unit_of_work() as session:
        removed = await repo.remove_bodies(session, found, finished_before=before, now=NOW)
    assert removed == 1
    async with db.read() as session:
        rows = {r.id: r for r in (await session.scalars(select(WebhookDelivery))).all()}
    assert rows[first.id].payload is None
    assert rows[second.id].payload is not None and rows[second.id].state == "pending"
    # And the other way round: a body removed is never made pending again.
    async with db.unit_of_work() as session:
        assert not await repo.replay(session, first.id, now=NOW)
    async with db.read() as session:
        gone = await session.get(WebhookDelivery, first.id)
    assert gone is not None and gone.state == "delivered"
    # The delivery sent again waits for a subscription that is inactive: gone with it.
    deleted = await api.delete(f"{V2}/webhooks/{webhook_id}", headers=tenant.headers)
    assert deleted.status_code == 204
