"""Webhook subscriptions (D20, D24, P19, P21): the API, the stored secret, what inactive and
deleted subscriptions receive, test events, the delivery log and replays, on both databases,
with real receivers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, update

from dialscore import __version__
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import WebhookAttempt, WebhookDelivery, WebhookSubscription
from dialscore.webhooks import verify
from dialscore.webhooks.service import emit, secret_box
from tests.conftest import SECRET
from tests.fakes import Answer, Received, running_receiver
from tests.support import (
    V2,
    Tenant,
    add_user,
    assert_error,
    make_tenant,
    many_contacts,
    settle,
    state_of,
    submit,
)

HOOKS = f"{V2}/webhooks"
BOTH = ["job.contact.scored", "job.completed"]
# A public address literal: accepted without DNS, and never called (no events reach it).
PUBLIC_URL = "https://93.184.216.34/hook"
SUBSCRIPTION_KEYS = {
    "id", "name", "url", "eventTypes", "triggers", "status", "createdAt", "rateLimit",
    "disabledAt", "disabledReason",
}  # fmt: skip
DELIVERY_KEYS = {
    "id",
    "eventType",
    "state",
    "attemptCount",
    "nextAttemptAt",
    "lastStatusCode",
    "lastError",
    "createdAt",
    "completedAt",
    "bodyRemovedAt",
    "bodyRemovedReason",
    "attempts",
}
ATTEMPT_KEYS = {"attempt", "statusCode", "durationMs", "error", "attemptedAt"}
PAGINATION_KEYS = {"page", "perPage", "totalCount", "totalPages", "hasNextPage", "hasPreviousPage"}
ENVELOPE_KEYS = {"payload", "eventType", "timestamp", "apiVersion", "id"}


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The conftest settings (and so its app, db, api and tenant) with receivers on 127.0.0.1
    allowed and a failed attempt retried 0.2 s later."""
    return settings.model_copy(
        update={"webhook_allow_private": True, "webhook_retry_schedule": "0.2,0.2,0.2"}
    )


@pytest.fixture
async def strict(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, Tenant]]:
    """An app with the production default: https and public targets only (D24)."""
    strict_settings = settings.model_copy(update={"webhook_allow_private": False})
    application = create_app(strict_settings, run_worker=False)
    async with application.router.lifespan_context(application):
        owner = await make_tenant(state_of(application).db, SECRET)
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client, owner


# -- helpers --------------------------------------------------------------------------------------


async def create(
    api: httpx.AsyncClient,
    tenant: Tenant,
    url: str = PUBLIC_URL,
    *,
    events: list[str] | None = None,
    field: str = "eventTypes",
    name: str = "hooks",
    **extra: Any,
) -> dict[str, Any]:
    """Creates a subscription, asserts 201, returns its data."""
    body = {"name": name, "url": url, field: BOTH if events is None else events, **extra}
    response = await api.post(HOOKS, json=body, headers=tenant.headers)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()["data"]
    return created


async def listed(api: httpx.AsyncClient, tenant: Tenant) -> list[dict[str, Any]]:
    response = await api.get(HOOKS, headers=tenant.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data"}
    assert set(body["data"]) == {"webhooks"}
    webhooks: list[dict[str, Any]] = body["data"]["webhooks"]
    return webhooks


def parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    assert parsed.tzinfo is not None, value
    return parsed


async def delivery_ids(db: Database, subscription_id: str) -> set[str]:
    async with db.read() as session:
        rows = await session.scalars(
            select(WebhookDelivery.id).where(WebhookDelivery.subscription_id == subscription_id)
        )
        return set(rows.all())


async def emit_held_back(
    db: Database, tenant: Tenant, subscription_id: str, count: int
) -> set[str]:
    """Emits ``count`` job.contact.scored events through the real emit, in one transaction
    that also moves their first attempt an hour ahead, so no attempt can happen before the
    test says so (see release)."""
    payloads = [
        {"contact": {"firstName": f"F{i}", "lastName": "L"}, "job": {"id": None, "type": None}}
        for i in range(count)
    ]
    async with db.unit_of_work() as session:
        written = await emit(
            session,
            user_id=tenant.user_id,
            event_type="job.contact.scored",
            payloads=payloads,
            job_id=None,
        )
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.subscription_id == subscription_id)
            .values(available_at=utcnow() + timedelta(hours=1))
        )
    ids = await delivery_ids(db, subscription_id)
    assert len(ids) == count
    assert written == count
    return ids


async def release(db: Database, subscription_id: str) -> None:
    """Makes the held-back deliveries of a subscription due now."""
    async with db.unit_of_work() as session:
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.subscription_id == subscription_id)
            .values(available_at=utcnow())
        )


async def wait_for(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Polls until ``condition`` holds; fails after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def barrier(app: FastAPI, api: httpx.AsyncClient, tenant: Tenant) -> None:
    """Returns once the dispatcher has run a claim after this call and is idle: a test event
    to a fresh subscription, created after every delivery due so far, has arrived. Claims go
    in order of due time, so anything claimable before it would have been claimed with it."""
    with running_receiver() as other:
        marker = await create(api, tenant, other.url, name="barrier")
        response = await api.post(f"{HOOKS}/{marker['id']}/test", headers=tenant.headers)
        assert response.status_code == 202, response.text
        await wait_for(lambda: len(other.received) >= 1, "the barrier's test event")
        dispatcher = state_of(app).extras["worker"].dispatcher
        await wait_for(lambda: dispatcher.busy == 0, "an idle dispatcher")
    deleted = await api.delete(f"{HOOKS}/{marker['id']}", headers=tenant.headers)
    assert deleted.status_code == 204


async def deliveries(
    api: httpx.AsyncClient, tenant: Tenant, subscription_id: str, **params: Any
) -> dict[str, Any]:
    response = await api.get(
        f"{HOOKS}/{subscription_id}/deliveries", headers=tenant.headers, params=params
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data"}
    assert set(body["data"]) == {"deliveries", "pagination"}
    page: dict[str, Any] = body["data"]
    return page


async def settle_until_delivered(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant, subscription_id: str, delivery_id: str
) -> dict[str, Any]:
    """settle() only waits for due deliveries: loops (bounded) while a retry is scheduled."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while True:
        await settle(app)
        page = await deliveries(api, tenant, subscription_id)
        found = [d for d in page["deliveries"] if d["id"] == delivery_id]
        assert len(found) == 1
        if found[0]["state"] != "pending":
            return found[0]
        if loop.time() > deadline:
            raise AssertionError(f"delivery still pending: {found[0]}")
        await asyncio.sleep(0.05)


def assert_signed(received: Received, secret: str) -> dict[str, Any]:
    assert verify(secret, received.body, received.headers.get("x-service-signature"))
    assert received.headers["content-type"].startswith("application/json")
    assert received.headers["user-agent"] == f"Service-Webhooks/{__version__}"
    envelope: dict[str, Any] = received.json()
    assert set(envelope) == ENVELOPE_KEYS
    assert envelope["apiVersion"] == "v2"
    return envelope


# -- create ---------------------------------------------------------------------------------------


async def test_create_answers_201_with_the_subscription_and_its_secret(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    before = datetime.now(UTC)
    response = await api.post(
        HOOKS,
        json={"name": "CRM sync", "url": PUBLIC_URL, "eventTypes": BOTH},
        headers=tenant.headers,
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"data"}
    data = body["data"]
    assert set(data) == SUBSCRIPTION_KEYS | {"secret"}
    assert str(uuid.UUID(data["id"])) == data["id"]
    assert data["name"] == "CRM sync"
    assert data["url"] == PUBLIC_URL
    assert data["eventTypes"] == BOTH
    assert data["triggers"] == BOTH
    assert data["status"] == "active"
    created_at = parse_time(data["createdAt"])
    assert before - timedelta(seconds=5) <= created_at <= datetime.now(UTC) + timedelta(seconds=5)
    assert isinstance(data["secret"], str) and len(data["secret"]) >= 16

    other = await create(api, tenant)
    assert other["secret"] != data["secret"]
    assert other["id"] != data["id"]


@pytest.mark.parametrize("field", ["eventTypes", "events"])
async def test_create_accepts_both_names_of_the_event_list(
    api: httpx.AsyncClient, tenant: Tenant, field: str
) -> None:
    created = await create(api, tenant, events=["job.completed"], field=field)
    assert created["eventTypes"] == ["job.completed"]
    assert created["triggers"] == ["job.completed"]
    (only,) = await listed(api, tenant)
    assert only["eventTypes"] == ["job.completed"]
    assert only["triggers"] == ["job.completed"]


async def test_create_honours_the_initial_status(api: httpx.AsyncClient, tenant: Tenant) -> None:
    inactive = await create(api, tenant, status="inactive", name="off")
    active = await create(api, tenant, status="active", name="on")
    assert inactive["status"] == "inactive"
    assert active["status"] == "active"
    statuses = {w["id"]: w["status"] for w in await listed(api, tenant)}
    assert statuses == {inactive["id"]: "inactive", active["id"]: "active"}


async def test_name_of_200_characters_is_accepted(api: httpx.AsyncClient, tenant: Tenant) -> None:
    created = await create(api, tenant, name="n" * 200)
    assert created["name"] == "n" * 200


async def test_secret_is_shown_only_at_creation(api: httpx.AsyncClient, tenant: Tenant) -> None:
    created = await create(api, tenant)
    secret = created["secret"]
    answers = [
        await api.get(HOOKS, headers=tenant.headers),
        await api.post(f"{HOOKS}/{created['id']}/inactive", headers=tenant.headers),
        await api.post(f"{HOOKS}/{created['id']}/active", headers=tenant.headers),
        await api.get(f"{HOOKS}/{created['id']}/deliveries", headers=tenant.headers),
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert secret not in answer.text
    (item,) = answers[0].json()["data"]["webhooks"]
    for shown in (item, answers[1].json()["data"], answers[2].json()["data"]):
        assert set(shown) >= SUBSCRIPTION_KEYS
        assert shown.get("secret") is None


async def test_answers_after_creation_have_no_secret_field(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    """The secret is "returned only in the creation response" (spec, D20): later answers
    leave the field out rather than showing it empty."""
    created = await create(api, tenant)
    (item,) = await listed(api, tenant)
    off = await api.post(f"{HOOKS}/{created['id']}/inactive", headers=tenant.headers)
    on = await api.post(f"{HOOKS}/{created['id']}/active", headers=tenant.headers)
    assert off.status_code == 200 and on.status_code == 200
    extra = {
        "list": set(item) - SUBSCRIPTION_KEYS,
        "inactive": set(off.json()["data"]) - SUBSCRIPTION_KEYS,
        "active": set(on.json()["data"]) - SUBSCRIPTION_KEYS,
    }
    assert extra == {"list": set(), "inactive": set(), "active": set()}


async def test_secret_is_stored_encrypted_with_the_server_key(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    created = await create(api, tenant)
    secret = created["secret"]
    async with db.read() as session:
        row = await session.get(WebhookSubscription, created["id"])
        assert row is not None
        ciphertext = row.secret_ciphertext
        columns = [str(getattr(row, c.key)) for c in WebhookSubscription.__table__.columns]
    assert secret not in ciphertext
    assert not any(secret in value for value in columns)
    assert secret_box(SECRET).open(ciphertext) == secret
    with pytest.raises(ValueError):
        secret_box("another-server-secret-that-is-long-enough-too").open(ciphertext)


# -- validation -----------------------------------------------------------------------------------

VALID = {"name": "hooks", "url": PUBLIC_URL, "eventTypes": ["job.completed"]}


def without(key: str) -> dict[str, Any]:
    return {k: v for k, v in VALID.items() if k != key}


BAD_BODIES: list[tuple[str, Any]] = [
    ("missing name", without("name")),
    ("empty name", {**VALID, "name": ""}),
    ("blank name", {**VALID, "name": "   "}),
    ("name not a string", {**VALID, "name": 42}),
    ("name over 200 characters", {**VALID, "name": "n" * 201}),
    ("missing url", without("url")),
    ("empty url", {**VALID, "url": ""}),
    ("url not a string", {**VALID, "url": ["https://93.184.216.34/"]}),
    ("http url", {**VALID, "url": "http://93.184.216.34/hook"}),
    ("ftp url", {**VALID, "url": "ftp://93.184.216.34/hook"}),
    ("not a url", {**VALID, "url": "hooks please"}),
    ("loopback", {**VALID, "url": "https://127.0.0.1/x"}),
    ("private 10/8", {**VALID, "url": "https://10.0.0.1/x"}),
    ("private 192.168/16", {**VALID, "url": "https://192.168.1.20/x"}),
    ("private 172.16/12", {**VALID, "url": "https://172.16.5.4/x"}),
    ("localhost", {**VALID, "url": "https://localhost/x"}),
    ("cloud metadata", {**VALID, "url": "https://169.254.169.254/latest"}),
    ("CGNAT", {**VALID, "url": "https://100.64.0.1/x"}),
    ("IPv6 loopback", {**VALID, "url": "https://[::1]/x"}),
    ("IPv4-mapped loopback", {**VALID, "url": "https://[::ffff:127.0.0.1]/x"}),
    ("missing event list", without("eventTypes")),
    ("empty event list", {**VALID, "eventTypes": []}),
    ("empty events list", {**without("eventTypes"), "events": []}),
    ("unknown event type", {**VALID, "eventTypes": ["job.started"]}),
    ("one unknown among known", {**VALID, "eventTypes": ["job.completed", "job.deleted"]}),
    ("event list a string", {**VALID, "eventTypes": "job.completed"}),
    ("event list of numbers", {**VALID, "eventTypes": [1, 2]}),
    ("event list of objects", {**VALID, "eventTypes": [{"type": "job.completed"}]}),
    ("bad status", {**VALID, "status": "paused"}),
    ("status not a string", {**VALID, "status": True}),
    ("body a list", [VALID]),
    ("body a string", "hooks"),
    ("body a number", 7),
    ("body null", None),
]


async def test_invalid_bodies_answer_400_and_create_nothing(
    strict: tuple[httpx.AsyncClient, Tenant],
) -> None:
    api, owner = strict
    for label, body in BAD_BODIES:
        response = await api.post(HOOKS, json=body, headers=owner.headers)
        assert response.status_code == 400, (label, response.text)
        assert_error(response, 400)
    assert await listed(api, owner) == []


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"", b"   ", b'{"name": "x",', '{"name": "caf\xe9"}'.encode("latin-1")],
    ids=["broken", "empty", "blank", "truncated", "not-utf8"],
)
async def test_body_that_is_not_json_answers_400(
    strict: tuple[httpx.AsyncClient, Tenant], content: bytes
) -> None:
    api, owner = strict
    response = await api.post(
        HOOKS,
        content=content,
        headers={**owner.headers, "Content-Type": "application/json"},
    )
    assert_error(response, 400)
    assert await listed(api, owner) == []


async def test_public_https_address_is_accepted_when_private_targets_are_refused(
    strict: tuple[httpx.AsyncClient, Tenant],
) -> None:
    api, owner = strict
    created = await create(api, owner, "https://93.184.216.34/hook")
    assert created["url"] == "https://93.184.216.34/hook"
    assert [w["id"] for w in await listed(api, owner)] == [created["id"]]


async def test_private_http_target_is_accepted_when_allowed(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    created = await create(api, tenant, "http://127.0.0.1:9/hook")
    assert created["url"] == "http://127.0.0.1:9/hook"


# -- list and tenancy -----------------------------------------------------------------------------


async def test_list_shows_only_the_callers_subscriptions(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    stranger = await make_tenant(db, SECRET, name="Globex")
    assert await listed(api, tenant) == []

    mine = [await create(api, tenant, name="a"), await create(api, tenant, name="b")]
    theirs = await create(api, colleague, name="c")
    foreign = await create(api, stranger, name="d")

    own_list = await listed(api, tenant)
    assert {w["id"] for w in own_list} == {m["id"] for m in mine}
    for item in own_list:
        created = next(m for m in mine if m["id"] == item["id"])
        assert {k: item[k] for k in SUBSCRIPTION_KEYS} == {k: created[k] for k in SUBSCRIPTION_KEYS}
        assert item.get("secret") is None
    assert [w["id"] for w in await listed(api, colleague)] == [theirs["id"]]
    assert [w["id"] for w in await listed(api, stranger)] == [foreign["id"]]


# -- activate and deactivate ----------------------------------------------------------------------


async def test_deactivate_and_activate_answer_200_with_the_new_status(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    created = await create(api, tenant)
    sid = created["id"]

    off = await api.post(f"{HOOKS}/{sid}/inactive", headers=tenant.headers)
    assert off.status_code == 200, off.text
    assert set(off.json()) == {"data"}
    assert off.json()["data"]["status"] == "inactive"
    assert off.json()["data"]["id"] == sid
    assert off.json()["data"]["createdAt"] == created["createdAt"]
    assert [w["status"] for w in await listed(api, tenant)] == ["inactive"]

    again = await api.post(f"{HOOKS}/{sid}/inactive", headers=tenant.headers)
    assert again.status_code == 200
    assert again.json()["data"]["status"] == "inactive"

    on = await api.post(f"{HOOKS}/{sid}/active", headers=tenant.headers)
    assert on.status_code == 200, on.text
    assert on.json()["data"]["status"] == "active"
    assert on.json()["data"]["eventTypes"] == BOTH
    assert [w["status"] for w in await listed(api, tenant)] == ["active"]


@pytest.mark.parametrize("action", ["active", "inactive"])
async def test_status_change_of_unknown_foreign_or_malformed_ids(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, action: str
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    stranger = await make_tenant(db, SECRET, name="Globex")
    start = "inactive" if action == "active" else "active"
    theirs = await create(api, colleague, status=start)
    foreign = await create(api, stranger, status=start)

    unknown = await api.post(f"{HOOKS}/{uuid.uuid4()}/{action}", headers=tenant.headers)
    assert_error(unknown, 404)
    for other in (theirs, foreign):
        answer = await api.post(f"{HOOKS}/{other['id']}/{action}", headers=tenant.headers)
        assert_error(answer, 404)
    malformed = await api.post(f"{HOOKS}/not-a-uuid/{action}", headers=tenant.headers)
    assert_error(malformed, 400)

    assert [w["status"] for w in await listed(api, colleague)] == [start]
    assert [w["status"] for w in await listed(api, stranger)] == [start]


# -- delete ---------------------------------------------------------------------------------------


async def test_delete_answers_204_and_the_subscription_is_gone(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    # Listens to another event type, so the emitted events are the doomed one's only.
    kept = await create(api, tenant, name="kept", events=["job.completed"])
    doomed = await create(api, tenant, name="doomed")
    pending = await emit_held_back(db, tenant, doomed["id"], 3)

    response = await api.delete(f"{HOOKS}/{doomed['id']}", headers=tenant.headers)
    assert response.status_code == 204
    assert response.content == b""

    assert [w["id"] for w in await listed(api, tenant)] == [kept["id"]]
    for path in ("active", "inactive", "test", "deliveries"):
        method = "GET" if path == "deliveries" else "POST"
        answer = await api.request(method, f"{HOOKS}/{doomed['id']}/{path}", headers=tenant.headers)
        assert_error(answer, 404)
    assert_error(await api.delete(f"{HOOKS}/{doomed['id']}", headers=tenant.headers), 404)

    assert await delivery_ids(db, doomed["id"]) == set()
    async with db.read() as session:
        left = await session.scalar(
            select(func.count())
            .select_from(WebhookDelivery)
            .where(WebhookDelivery.id.in_(list(pending)))
        )
        assert left == 0
        assert await session.get(WebhookSubscription, doomed["id"]) is None


async def test_delete_of_unknown_foreign_or_malformed_ids(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    stranger = await make_tenant(db, SECRET, name="Globex")
    theirs = await create(api, colleague)
    foreign = await create(api, stranger)

    assert_error(await api.delete(f"{HOOKS}/{uuid.uuid4()}", headers=tenant.headers), 404)
    assert_error(await api.delete(f"{HOOKS}/{theirs['id']}", headers=tenant.headers), 404)
    assert_error(await api.delete(f"{HOOKS}/{foreign['id']}", headers=tenant.headers), 404)
    assert_error(await api.delete(f"{HOOKS}/12345", headers=tenant.headers), 400)
    assert [w["id"] for w in await listed(api, colleague)] == [theirs["id"]]
    assert [w["id"] for w in await listed(api, stranger)] == [foreign["id"]]


# -- what inactive and deleted subscriptions receive ----------------------------------------------


async def test_inactive_subscription_gets_no_events_of_a_job(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    with running_receiver() as off_receiver, running_receiver() as on_receiver:
        off = await create(api, tenant, off_receiver.url, status="inactive", name="off")
        await create(api, tenant, on_receiver.url, name="on")
        response = await submit(api, tenant, many_contacts(3))
        assert response.status_code == 200, response.text
        await settle(app)
        # The active subscription of the same user got the job's events: they were emitted.
        assert len(on_receiver.events("job.contact.scored")) == 3
        assert len(on_receiver.events("job.completed")) == 1
        assert off_receiver.received == []
        assert await delivery_ids(db, off["id"]) == set()

        # Events that happened while inactive are not recorded (P19): activating sends none.
        on = await api.post(f"{HOOKS}/{off['id']}/active", headers=tenant.headers)
        assert on.status_code == 200
        await settle(app)
        assert off_receiver.received == []

        # Events after activation arrive.
        response = await submit(api, tenant, many_contacts(2, start=100))
        assert response.status_code == 200, response.text
        await settle(app)
        assert len(off_receiver.events("job.contact.scored")) == 2
        assert len(off_receiver.events("job.completed")) == 1


async def test_pending_deliveries_wait_while_inactive_and_go_out_on_activate(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    with running_receiver() as receiver:
        created = await create(api, tenant, receiver.url, events=["job.contact.scored"])
        sid, secret = created["id"], created["secret"]
        pending = await emit_held_back(db, tenant, sid, 3)

        off = await api.post(f"{HOOKS}/{sid}/inactive", headers=tenant.headers)
        assert off.status_code == 200
        await release(db, sid)
        await barrier(app, api, tenant)
        assert receiver.received == []
        async with db.read() as session:
            rows = (
                await session.scalars(
                    select(WebhookDelivery).where(WebhookDelivery.subscription_id == sid)
                )
            ).all()
        assert {r.id for r in rows} == pending
        assert {(r.state, r.attempts) for r in rows} == {("pending", 0)}

        on = await api.post(f"{HOOKS}/{sid}/active", headers=tenant.headers)
        assert on.status_code == 200
        await settle(app)
        received = list(receiver.received)

    envelopes = [assert_signed(r, secret) for r in received]
    assert sorted(e["id"] for e in envelopes) == sorted(pending)
    assert {e["eventType"] for e in envelopes} == {"job.contact.scored"}
    page = await deliveries(api, tenant, sid)
    assert {d["id"]: d["state"] for d in page["deliveries"]} == dict.fromkeys(pending, "delivered")


async def test_deleted_subscription_gets_nothing(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    with running_receiver() as receiver:
        created = await create(api, tenant, receiver.url)
        sid = created["id"]
        await emit_held_back(db, tenant, sid, 3)
        deleted = await api.delete(f"{HOOKS}/{sid}", headers=tenant.headers)
        assert deleted.status_code == 204
        assert await delivery_ids(db, sid) == set()

        response = await submit(api, tenant, many_contacts(2))
        assert response.status_code == 200, response.text
        await settle(app)
        await barrier(app, api, tenant)
        assert receiver.received == []


# -- test events ----------------------------------------------------------------------------------


async def test_test_event_reaches_the_receiver_signed(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    with running_receiver() as receiver:
        created = await create(api, tenant, receiver.url)
        before_ms = int(datetime.now(UTC).timestamp() * 1000)
        response = await api.post(f"{HOOKS}/{created['id']}/test", headers=tenant.headers)
        assert response.status_code == 202, response.text
        body = response.json()
        assert set(body) == {"data"}
        delivery = body["data"]
        assert set(delivery) == DELIVERY_KEYS
        assert delivery["eventType"] == "webhook.test"
        assert delivery["state"] == "pending"
        assert delivery["attemptCount"] == 0
        assert delivery["attempts"] == []
        assert delivery["completedAt"] is None
        assert isinstance(delivery["nextAttemptAt"], str)
        parse_time(delivery["createdAt"])
        assert created["secret"] not in response.text
        await settle(app)
        after_ms = int(datetime.now(UTC).timestamp() * 1000)
        received = list(receiver.received)

    assert len(received) == 1
    envelope = assert_signed(received[0], created["secret"])
    assert not verify("whsec_wrong", received[0].body, received[0].headers["x-service-signature"])
    assert envelope["eventType"] == "webhook.test"
    assert envelope["id"] == delivery["id"]
    assert isinstance(envelope["payload"], dict)
    assert isinstance(envelope["timestamp"], int) and not isinstance(envelope["timestamp"], bool)
    assert before_ms - 1000 <= envelope["timestamp"] <= after_ms + 1000
    assert received[0].path == "/hook"


async def test_test_event_goes_to_an_inactive_subscription_too(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    """P21: a user checking a receiver gets the test event whatever the status."""
    with running_receiver() as receiver:
        created = await create(api, tenant, receiver.url, status="inactive")
        sent = await api.post(f"{HOOKS}/{created['id']}/test", headers=tenant.headers)
        assert sent.status_code == 202, sent.text
        await settle(app)
        received = list(receiver.received)
    assert [assert_signed(r, created["secret"])["id"] for r in received] == [
        sent.json()["data"]["id"]
    ]
    assert [w["status"] for w in await listed(api, tenant)] == ["inactive"]


async def test_test_event_of_unknown_foreign_or_malformed_ids(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    theirs = await create(api, colleague)
    assert_error(await api.post(f"{HOOKS}/{uuid.uuid4()}/test", headers=tenant.headers), 404)
    assert_error(await api.post(f"{HOOKS}/{theirs['id']}/test", headers=tenant.headers), 404)
    assert_error(await api.post(f"{HOOKS}/nope/test", headers=tenant.headers), 400)
    assert await delivery_ids(db, theirs["id"]) == set()


# -- delivery log ---------------------------------------------------------------------------------


async def test_delivery_log_shows_a_failed_attempt_then_the_successful_retry(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    def fail_once(request: Received, index: int) -> Answer:
        return Answer(500) if index == 0 else Answer(200)

    with running_receiver(fail_once) as receiver:
        created = await create(api, tenant, receiver.url)
        sid = created["id"]
        sent = await api.post(f"{HOOKS}/{sid}/test", headers=tenant.headers)
        assert sent.status_code == 202, sent.text
        delivery_id = sent.json()["data"]["id"]
        entry = await settle_until_delivered(app, api, tenant, sid, delivery_id)
        received = list(receiver.received)

    assert len(received) == 2
    assert [assert_signed(r, created["secret"])["id"] for r in received] == [delivery_id] * 2
    assert received[0].body == received[1].body

    assert set(entry) == DELIVERY_KEYS
    assert entry["eventType"] == "webhook.test"
    assert entry["state"] == "delivered"
    assert entry["attemptCount"] == 2
    assert entry["lastStatusCode"] == 200
    assert entry["lastError"] is None
    assert entry["nextAttemptAt"] is None
    completed_at = parse_time(entry["completedAt"])
    assert completed_at >= parse_time(entry["createdAt"])
    attempts = entry["attempts"]
    assert [set(a) for a in attempts] == [ATTEMPT_KEYS, ATTEMPT_KEYS]
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert [a["statusCode"] for a in attempts] == [500, 200]
    assert isinstance(attempts[0]["error"], str) and "500" in attempts[0]["error"]
    assert attempts[1]["error"] is None
    for attempt in attempts:
        assert isinstance(attempt["durationMs"], int) and attempt["durationMs"] >= 0
    first, second = (parse_time(a["attemptedAt"]) for a in attempts)
    # The retry came after the configured 0.2 s delay, not at once.
    assert second - first >= timedelta(seconds=0.15)


async def test_delivery_log_is_paginated_newest_first(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    with running_receiver() as receiver:
        created = await create(api, tenant, receiver.url)
        sid = created["id"]
        ids = []
        for _ in range(3):
            sent = await api.post(f"{HOOKS}/{sid}/test", headers=tenant.headers)
            assert sent.status_code == 202
            ids.append(sent.json()["data"]["id"])
        await settle(app)
        assert len(receiver.received) == 3

    full = await deliveries(api, tenant, sid)
    assert [d["id"] for d in full["deliveries"]] == ids[::-1]
    assert full["pagination"] == {
        "page": 1,
        "perPage": 100,
        "totalCount": 3,
        "totalPages": 1,
        "hasNextPage": False,
        "hasPreviousPage": False,
    }
    for entry in full["deliveries"]:
        assert set(entry) == DELIVERY_KEYS
        assert entry["state"] == "delivered"
        assert entry["attemptCount"] == 1
        assert [a["statusCode"] for a in entry["attempts"]] == [200]

    first = await deliveries(api, tenant, sid, limit=2)
    assert [d["id"] for d in first["deliveries"]] == [ids[2], ids[1]]
    assert set(first["pagination"]) == PAGINATION_KEYS
    assert first["pagination"] == {
        "page": 1,
        "perPage": 2,
        "totalCount": 3,
        "totalPages": 2,
        "hasNextPage": True,
        "hasPreviousPage": False,
    }
    second = await deliveries(api, tenant, sid, limit=2, page=2)
    assert [d["id"] for d in second["deliveries"]] == [ids[0]]
    assert second["pagination"]["hasNextPage"] is False
    assert second["pagination"]["hasPreviousPage"] is True
    beyond = await deliveries(api, tenant, sid, limit=2, page=3)
    assert beyond["deliveries"] == []
    assert beyond["pagination"]["totalCount"] == 3

    # Another subscription of the same user has its own, empty, log.
    other = await create(api, tenant)
    assert (await deliveries(api, tenant, other["id"]))["pagination"]["totalCount"] == 0

    for params in ({"page": 0}, {"limit": 0}, {"limit": 1001}, {"page": "x"}):
        bad = await api.get(f"{HOOKS}/{sid}/deliveries", headers=tenant.headers, params=params)
        assert_error(bad, 400)


async def test_delivery_log_of_unknown_foreign_or_malformed_ids(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    stranger = await make_tenant(db, SECRET, name="Globex")
    foreign = await create(api, stranger)
    path = f"{HOOKS}/{{}}/deliveries"
    assert_error(await api.get(path.format(uuid.uuid4()), headers=tenant.headers), 404)
    assert_error(await api.get(path.format(foreign["id"]), headers=tenant.headers), 404)
    assert_error(await api.get(path.format("not-a-uuid"), headers=tenant.headers), 400)


# -- replays --------------------------------------------------------------------------------------


async def test_retry_sends_a_delivered_event_again_with_the_same_id(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    with running_receiver() as receiver:
        created = await create(api, tenant, receiver.url)
        sid, secret = created["id"], created["secret"]
        sent = await api.post(f"{HOOKS}/{sid}/test", headers=tenant.headers)
        delivery_id = sent.json()["data"]["id"]
        await settle(app)
        assert len(receiver.received) == 1

        again = await api.post(
            f"{HOOKS}/{sid}/deliveries/{delivery_id}/retry", headers=tenant.headers
        )
        assert again.status_code == 202, again.text
        body = again.json()
        assert set(body) == {"data"}
        assert set(body["data"]) == DELIVERY_KEYS
        assert body["data"]["id"] == delivery_id
        assert body["data"]["state"] == "pending"
        await settle(app)
        received = list(receiver.received)

    assert len(received) == 2
    assert [assert_signed(r, secret)["id"] for r in received] == [delivery_id, delivery_id]
    (entry,) = (await deliveries(api, tenant, sid))["deliveries"]
    assert entry["state"] == "delivered"
    assert entry["attemptCount"] == 2
    assert [a["attempt"] for a in entry["attempts"]] == [1, 2]
    async with db.read() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(WebhookAttempt)
            .where(WebhookAttempt.delivery_id == delivery_id)
        )
    assert count == 2


async def test_retry_of_unknown_foreign_or_malformed_deliveries(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    with running_receiver() as receiver:
        mine = await create(api, tenant, receiver.url, name="mine")
        sibling = await create(api, tenant, receiver.url, name="sibling")
        theirs = await create(api, colleague, receiver.url, name="theirs")
        sent = await api.post(f"{HOOKS}/{mine['id']}/test", headers=tenant.headers)
        delivery_id = sent.json()["data"]["id"]
        await settle(app)
        assert len(receiver.received) == 1

        def retry(subscription_id: str, delivery: str, who: Tenant = tenant) -> Any:
            path = f"{HOOKS}/{subscription_id}/deliveries/{delivery}/retry"
            return api.post(path, headers=who.headers)

        assert_error(await retry(mine["id"], str(uuid.uuid4())), 404)
        assert_error(await retry(mine["id"], "not-a-uuid"), 400)
        assert_error(await retry("not-a-uuid", delivery_id), 400)
        assert_error(await retry(str(uuid.uuid4()), delivery_id), 404)
        # A delivery belongs to its subscription: another subscription's path does not reach it.
        assert_error(await retry(sibling["id"], delivery_id), 404)
        # Another user cannot replay it, through their own subscription or the owner's.
        assert_error(await retry(theirs["id"], delivery_id, colleague), 404)
        assert_error(await retry(mine["id"], delivery_id, colleague), 404)
        await settle(app)
        assert len(receiver.received) == 1


# -- authentication -------------------------------------------------------------------------------


async def test_webhook_calls_need_a_key(api: httpx.AsyncClient, tenant: Tenant) -> None:
    created = await create(api, tenant)
    calls = [
        ("POST", HOOKS, {"name": "x", "url": PUBLIC_URL, "eventTypes": BOTH}),
        ("GET", HOOKS, None),
        ("POST", f"{HOOKS}/{created['id']}/inactive", None),
        ("POST", f"{HOOKS}/{created['id']}/active", None),
        ("POST", f"{HOOKS}/{created['id']}/test", None),
        ("GET", f"{HOOKS}/{created['id']}/deliveries", None),
        ("DELETE", f"{HOOKS}/{created['id']}", None),
    ]
    for method, path, body in calls:
        assert_error(await api.request(method, path, json=body), 401)
        wrong = {"Authorization": "Bearer not-a-key"}
        assert_error(await api.request(method, path, json=body, headers=wrong), 401)
    (still,) = await listed(api, tenant)
    assert still["id"] == created["id"] and still["status"] == "active"


async def test_free_plan_key_answers_403(api: httpx.AsyncClient, db: Database) -> None:
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    response = await api.post(
        HOOKS, json={"name": "x", "url": PUBLIC_URL, "eventTypes": BOTH}, headers=free.headers
    )
    assert_error(response, 403)
    assert_error(await api.get(HOOKS, headers=free.headers), 403)
    async with db.read() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(WebhookSubscription)
            .where(WebhookSubscription.user_id == free.user_id)
        )
    assert count == 0


async def test_delivery_of_a_secret_sealed_under_another_key_fails_alone(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    """A subscription whose secret the server can no longer open does not stall the rest."""
    with running_receiver() as receiver:
        broken = await create(api, tenant, receiver.url)
        healthy = await create(api, tenant, receiver.url)
        async with db.unit_of_work() as session:
            await session.execute(
                update(WebhookSubscription)
                .where(WebhookSubscription.id == broken["id"])
                .values(secret_ciphertext=secret_box("another-server-secret").seal("whsec_x"))
            )
        for subscription in (broken, healthy):
            response = await api.post(
                f"{V2}/webhooks/{subscription['id']}/test", headers=tenant.headers
            )
            assert response.status_code == 202
        await settle(app)
        log = await api.get(f"{V2}/webhooks/{broken['id']}/deliveries", headers=tenant.headers)
    deliveries = log.json()["data"]["deliveries"]
    assert [d["state"] for d in deliveries] == ["failed"]
    assert "SECRET_KEY" in deliveries[0]["lastError"]
    assert [r.json()["payload"]["subscriptionId"] for r in receiver.received] == [healthy["id"]]
