"""Recovering the failed deliveries of a time range (P150), on both databases, with a real
receiver on 127.0.0.1: those that failed are sent again with their envelope ids and a new
retry window; the rest of the log, and other subscriptions, are left as they were."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from dialscore.config import Settings
from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.db import Database
from dialscore.models import WebhookDelivery
from dialscore.webhooks import repository as repo
from dialscore.webhooks import service
from tests.conftest import SECRET
from tests.fakes import Answer, Received, running_receiver
from tests.support import Tenant, add_user, assert_error, settle
from tests.test_webhook_subscriptions import (
    HOOKS,
    assert_signed,
    create,
    settle_until_delivered,
)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Receivers on 127.0.0.1 allowed; a failed attempt retried 0.2 s later, twice."""
    return settings.model_copy(
        update={"webhook_allow_private": True, "webhook_retry_schedule": "0.2,0.2"}
    )


def failed_row(
    tenant: Tenant,
    subscription_id: str,
    name: str,
    *,
    created: datetime,
    state: str = "failed",
    removed: bool = False,
) -> WebhookDelivery:
    """A delivery of ``subscription_id`` created at ``created`` whose retries ran out (or
    delivered, or pending and held for a day, by ``state``); its name in its payload."""
    finished = None if state == "pending" else created + timedelta(minutes=5)
    return WebhookDelivery(
        id=str(uuid.uuid4()),
        kind="webhook",
        subscription_id=subscription_id,
        user_id=tenant.user_id,
        event_type="job.contact.scored",
        job_id=None,
        payload=None if removed else {"contact": {"firstName": name}, "job": {"id": None}},
        timestamp_ms=int(created.timestamp() * 1000),
        state=state,
        attempts=0 if state == "pending" else 3,
        available_at=utcnow() + timedelta(days=1) if state == "pending" else created,
        first_attempt_at=None if state == "pending" else created,
        last_status_code={"failed": 503, "delivered": 200}.get(state),
        last_error="receiver answered 503" if state == "failed" else None,
        created_at=created,
        completed_at=finished,
        body_removed_at=finished if removed else None,
        body_removed_reason=repo.RETENTION if removed else None,
    )


async def rows_by_id(db: Database) -> dict[str, WebhookDelivery]:
    async with db.read() as session:
        return {r.id: r for r in (await session.scalars(select(WebhookDelivery))).all()}


async def test_failed_deliveries_of_the_range_go_out_again_with_their_envelope_ids(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    down = [True]

    def receiver_down(request: Received, index: int) -> Answer:
        return Answer(503) if down[0] else Answer(200)

    with running_receiver(receiver_down) as receiver:
        mine = await create(api, tenant, receiver.url, name="mine")
        sibling = await create(api, tenant, receiver.url, name="sibling")
        sid = mine["id"]

        # One delivery fails for real: its retries run out while the receiver is down.
        sent = await api.post(f"{HOOKS}/{sid}/test", headers=tenant.headers)
        assert sent.status_code == 202, sent.text
        live_id = sent.json()["data"]["id"]
        entry = await settle_until_delivered(app, api, tenant, sid, live_id)
        assert entry["state"] == "failed" and entry["attemptCount"] == 3
        assert len(receiver.received) == 3

        # The rest of the log, as it would be after a day of the receiver down.
        now = utcnow()
        since, until = now - timedelta(hours=2), now - timedelta(minutes=30)
        rows = {
            "failed-in": failed_row(tenant, sid, "a", created=since),
            "failed-in-later": failed_row(tenant, sid, "b", created=until - timedelta(seconds=1)),
            "failed-before": failed_row(tenant, sid, "c", created=since - timedelta(seconds=1)),
            "failed-at-until": failed_row(tenant, sid, "d", created=until),
            "delivered-in": failed_row(tenant, sid, "e", created=since, state="delivered"),
            "pending-in": failed_row(tenant, sid, "f", created=since, state="pending"),
            "removed-in": failed_row(tenant, sid, "g", created=since, removed=True),
            "sibling-in": failed_row(tenant, sibling["id"], "h", created=since),
        }
        async with db.unit_of_work() as session:
            session.add_all(rows.values())
        before = await rows_by_id(db)
        down[0] = False
        receiver.received.clear()

        # [since, until): the two failed ones in it; the one whose body was removed skipped.
        body = {"since": isoformat(since), "until": isoformat(until)}
        answer = await api.post(f"{HOOKS}/{sid}/recover", json=body, headers=tenant.headers)
        assert answer.status_code == 202, answer.text
        assert answer.json() == {"data": {"recovered": 2, "skipped": 1, "more": False}}
        await settle(app)
        first = {assert_signed(r, mine["secret"])["id"] for r in receiver.received}
        assert first == {rows["failed-in"].id, rows["failed-in-later"].id}

        # until defaults to now: the one at the old until, and the one failed for real.
        body = {"since": isoformat(until)}
        answer = await api.post(f"{HOOKS}/{sid}/recover", json=body, headers=tenant.headers)
        assert answer.status_code == 202, answer.text
        assert answer.json() == {"data": {"recovered": 2, "skipped": 0, "more": False}}
        await settle(app)
        received = [assert_signed(r, mine["secret"])["id"] for r in receiver.received]

    assert sorted(received) == sorted(
        [rows["failed-in"].id, rows["failed-in-later"].id, rows["failed-at-until"].id, live_id]
    )
    after = await rows_by_id(db)
    for name in ("failed-in", "failed-in-later", "failed-at-until"):
        row = after[rows[name].id]
        assert row.state == "delivered" and row.attempts == 4, name
        # A new retry window: its first attempt is the one made after the recovery.
        assert row.first_attempt_at is not None and row.first_attempt_at >= now, name
        assert row.body_removed_at is None
    live = after[live_id]
    assert live.state == "delivered" and live.attempts == 4
    # The rest is as it was.
    for name in ("failed-before", "delivered-in", "pending-in", "removed-in", "sibling-in"):
        was, row = before[rows[name].id], after[rows[name].id]
        assert (row.state, row.attempts, row.available_at, row.completed_at) == (
            was.state,
            was.attempts,
            was.available_at,
            was.completed_at,
        ), name
    assert after[rows["removed-in"].id].payload is None


async def test_a_large_range_is_recovered_in_bounded_calls(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "RECOVER_LIMIT", 2)
    # Inactive: what is recovered stays pending (P19), and is sent nowhere.
    sid = (await create(api, tenant, "https://93.184.216.34/hook", status="inactive"))["id"]
    now = utcnow()
    made = [failed_row(tenant, sid, f"n{i}", created=now - timedelta(minutes=i)) for i in range(5)]
    async with db.unit_of_work() as session:
        session.add_all(made)
    body = {"since": isoformat(now - timedelta(hours=1))}
    answers = []
    for _ in range(3):
        answer = await api.post(f"{HOOKS}/{sid}/recover", json=body, headers=tenant.headers)
        assert answer.status_code == 202, answer.text
        answers.append(answer.json()["data"])
        if len(answers) == 1:
            # The earliest created first.
            states = {r.id: r.state for r in (await rows_by_id(db)).values()}
            assert [states[r.id] for r in made] == ["failed"] * 3 + ["pending"] * 2
    assert answers == [
        {"recovered": 2, "skipped": 0, "more": True},
        {"recovered": 2, "skipped": 0, "more": True},
        {"recovered": 1, "skipped": 0, "more": False},
    ]
    assert all(r.state == "pending" for r in (await rows_by_id(db)).values())
    # Pending for an inactive subscription, they would keep the test's end waiting.
    deleted = await api.delete(f"{HOOKS}/{sid}", headers=tenant.headers)
    assert deleted.status_code == 204


async def test_recover_of_unknown_foreign_or_malformed_ids_and_bad_bodies(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    mine = await create(api, tenant, "https://93.184.216.34/hook", name="mine")
    theirs = await create(api, colleague, "https://93.184.216.34/hook", name="theirs")
    good: dict[str, Any] = {"since": "2025-06-03T12:00:00Z"}

    def recover(subscription_id: str, body: Any, who: Tenant = tenant) -> Any:
        return api.post(f"{HOOKS}/{subscription_id}/recover", json=body, headers=who.headers)

    assert_error(await recover(str(uuid.uuid4()), good), 404)
    assert_error(await recover(theirs["id"], good), 404)
    assert_error(await recover(mine["id"], good, colleague), 404)
    assert_error(await recover("not-a-uuid", good), 400)
    assert (await recover(mine["id"], good)).json() == {
        "data": {"recovered": 0, "skipped": 0, "more": False}
    }

    sid = mine["id"]
    assert assert_error(await recover(sid, {}), 400) == "'since' is required"
    assert "since must be an ISO 8601" in assert_error(await recover(sid, {"since": "soon"}), 400)
    # A time without its offset is ambiguous: refused, not read as UTC.
    naive = {"since": "2025-06-03T12:00:00"}
    assert "since must be an ISO 8601" in assert_error(await recover(sid, naive), 400)
    assert assert_error(await recover(sid, {"since": 1748952000}), 400) == (
        "'since' must be a string"
    )
    edge = {"since": "0001-01-01T00:00:00+01:00"}
    assert "since must be an ISO 8601" in assert_error(await recover(sid, edge), 400)
    bad_until = {**good, "until": "tomorrow"}
    assert "until must be an ISO 8601" in assert_error(await recover(sid, bad_until), 400)
    backwards = {"since": "2025-06-03T12:00:00Z", "until": "2025-06-03T13:00:00+02:00"}
    assert assert_error(await recover(sid, backwards), 400) == "until must not be before since"
    assert "'state'" in assert_error(await recover(sid, {**good, "state": "failed"}), 400)
    assert_error(await recover(sid, ["2025-06-03T12:00:00Z"]), 400)
