"""Changing a subscription in place (PATCH, P140) and a subscription's own delivery rate
(``rateLimit``, P141), on both databases: every field, refused bodies, other users' ids, the
next delivery going to a changed URL, and a subscription's rate holding its deliveries apart
under a higher user rate (at the limiter, by its injected clock, and end to end, at the
recorded start of each send, as the user-rate tests measure it)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from sqlalchemy import select

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit.db import Database
from dialscore.models import WebhookAttempt, WebhookDelivery, WebhookSubscription
from dialscore.webhooks.ratelimit import WINDOW_SECONDS, MemoryRateLimiter, RedisRateLimiter
from tests.conftest import SECRET
from tests.fakes import running_receiver
from tests.support import (
    V2,
    Tenant,
    add_user,
    assert_error,
    make_tenant,
    many_contacts,
    settle,
    state_of,
)
from tests.test_webhook_delivery import busiest_second, running
from tests.test_webhook_policy import REDIS_URL

HOOKS = f"{V2}/webhooks"
BOTH = ["job.contact.scored", "job.completed"]
PUBLIC_URL = "https://93.184.216.34/hook"
KEYS = {
    "id", "name", "url", "eventTypes", "triggers", "status", "createdAt", "rateLimit",
    "disabledAt", "disabledReason",
}  # fmt: skip


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Receivers on 127.0.0.1 allowed, as in the other webhook tests."""
    return settings.model_copy(
        update={"webhook_allow_private": True, "webhook_retry_schedule": "0.2,0.2,0.2"}
    )


@pytest.fixture
async def strict(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, Tenant]]:
    """An app with the production default: https and public targets only (D24)."""
    application = create_app(
        settings.model_copy(update={"webhook_allow_private": False}), run_worker=False
    )
    async with application.router.lifespan_context(application):
        owner = await make_tenant(state_of(application).db, SECRET)
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client, owner


async def create(api: httpx.AsyncClient, tenant: Tenant, **fields: Any) -> dict[str, Any]:
    body = {"name": "hooks", "url": PUBLIC_URL, "eventTypes": BOTH, **fields}
    response = await api.post(HOOKS, json=body, headers=tenant.headers)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()["data"]
    return created


async def patch(
    api: httpx.AsyncClient, tenant: Tenant, webhook_id: str, body: Any
) -> httpx.Response:
    return await api.patch(f"{HOOKS}/{webhook_id}", json=body, headers=tenant.headers)


async def listed(api: httpx.AsyncClient, tenant: Tenant) -> list[dict[str, Any]]:
    response = await api.get(HOOKS, headers=tenant.headers)
    assert response.status_code == 200, response.text
    webhooks: list[dict[str, Any]] = response.json()["data"]["webhooks"]
    return webhooks


async def sealed_secret(db: Database, webhook_id: str) -> str:
    async with db.read() as session:
        row = await session.get(WebhookSubscription, webhook_id)
    assert row is not None
    return row.secret_ciphertext


# -- PATCH ----------------------------------------------------------------------------------------


async def test_patch_changes_each_field_in_place_and_keeps_the_rest(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    created = await create(api, tenant, status="inactive")
    assert created["rateLimit"] is None
    sealed = await sealed_secret(db, created["id"])
    steps: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"name": "  CRM sync  "}, {"name": "CRM sync"}),
        # Normalised as on creation (P75).
        ({"url": "HTTPS://93.184.216.34:443/New#top"}, {"url": "https://93.184.216.34/New"}),
        ({"eventTypes": ["job.completed"]}, {"eventTypes": ["job.completed"]}),
        (
            {"events": ["job.contact.scored", "job.completed", "job.completed"]},
            {"eventTypes": ["job.contact.scored", "job.completed"]},
        ),
        ({"eventTypes": ["job.completed"], "events": ["job.completed"]}, {}),
        ({"rateLimit": 2}, {"rateLimit": 2}),
        ({"rateLimit": 0.5}, {"rateLimit": 0.5}),
        ({"rateLimit": None}, {"rateLimit": None}),
        (
            {"name": "both", "url": "http://127.0.0.1:9/hook", "rateLimit": 1000},
            {"name": "both", "url": "http://127.0.0.1:9/hook", "rateLimit": 1000},
        ),
    ]
    expected = dict(created)
    del expected["secret"]
    for body, changed in steps:
        response = await patch(api, tenant, created["id"], body)
        assert response.status_code == 200, (body, response.text)
        answer = response.json()
        assert set(answer) == {"data"}
        data = answer["data"]
        assert set(data) == KEYS, body  # no secret
        if "eventTypes" in body or "events" in body:
            expected["eventTypes"] = expected["triggers"] = changed.get(
                "eventTypes", body.get("eventTypes")
            )
        expected.update({k: v for k, v in changed.items() if k != "eventTypes"})
        assert data == expected, body
        assert await listed(api, tenant) == [expected]
    # The secret and the status stay as they were.
    assert expected["status"] == "inactive"
    assert await sealed_secret(db, created["id"]) == sealed


async def test_create_takes_a_rate_limit(api: httpx.AsyncClient, tenant: Tenant) -> None:
    created = await create(api, tenant, rateLimit=3)
    assert created["rateLimit"] == 3
    fractional = await create(api, tenant, rateLimit=0.25)
    assert fractional["rateLimit"] == 0.25
    assert [w["rateLimit"] for w in await listed(api, tenant)] == [3, 0.25]


BAD_PATCHES: list[tuple[str, Any, str]] = [
    ("empty body", {}, "names nothing to change"),
    ("body a list", [{"name": "x"}], "request body must be a JSON object"),
    ("body null", None, ""),
    ("unknown field", {"name": "x", "secret": "whsec_x"}, "'secret' is not a field"),
    ("status is not changed here", {"status": "inactive"}, "'status' is not a field"),
    ("null name", {"name": None}, "'name' must not be null"),
    ("blank name", {"name": "  "}, "'name'"),
    ("long name", {"name": "n" * 201}, "'name'"),
    ("null url", {"url": None}, "'url' must not be null"),
    ("http url", {"url": "http://93.184.216.34/hook"}, "url is not allowed"),
    ("private host", {"url": "https://10.0.0.1/x"}, "url is not allowed"),
    ("loopback", {"url": "https://127.0.0.1/x"}, "url is not allowed"),
    ("user in url", {"url": "https://me:pw@93.184.216.34/x"}, "url is not allowed"),
    ("not a url", {"url": "hooks please"}, "url is not allowed"),
    ("unknown event", {"eventTypes": ["job.started"]}, "'eventTypes.0'"),
    ("empty events", {"eventTypes": []}, "'eventTypes'"),
    ("null events", {"events": None}, "'events' must not be null"),
    (
        "lists that differ",
        {"eventTypes": ["job.completed"], "events": BOTH},
        "eventTypes and events differ",
    ),
    ("rate 0", {"rateLimit": 0}, "'rateLimit' must be at least 0.1"),
    ("negative rate", {"rateLimit": -1}, "'rateLimit' must be at least 0.1"),
    ("rate too small", {"rateLimit": 0.01}, "'rateLimit' must be at least 0.1"),
    ("rate too large", {"rateLimit": 1001}, "'rateLimit' must be at most 1000"),
    ("rate a string", {"rateLimit": "5"}, "'rateLimit' must be a number"),
    ("rate a boolean", {"rateLimit": True}, "'rateLimit' must be a number"),
]


async def test_bad_patches_answer_400_and_change_nothing(
    strict: tuple[httpx.AsyncClient, Tenant],
) -> None:
    api, owner = strict
    created = await create(api, owner, rateLimit=2)
    del created["secret"]
    for label, body, says in BAD_PATCHES:
        response = await patch(api, owner, created["id"], body)
        message = assert_error(response, 400)
        assert says in message, (label, message)
    assert await listed(api, owner) == [created]


async def test_bad_rate_limits_on_create_answer_400(
    strict: tuple[httpx.AsyncClient, Tenant],
) -> None:
    api, owner = strict
    for rate in (0, -2, "5", True, 1001, [1]):
        body = {"name": "x", "url": PUBLIC_URL, "eventTypes": BOTH, "rateLimit": rate}
        assert "'rateLimit'" in assert_error(
            await api.post(HOOKS, json=body, headers=owner.headers), 400
        ), rate
    assert await listed(api, owner) == []


async def test_patch_of_unknown_foreign_or_malformed_ids(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    stranger = await make_tenant(db, SECRET, name="Globex")
    theirs = await create(api, colleague)
    foreign = await create(api, stranger)
    for webhook_id in (str(uuid.uuid4()), theirs["id"], foreign["id"]):
        assert_error(await patch(api, tenant, webhook_id, {"name": "mine now"}), 404)
    assert_error(await patch(api, tenant, "not-a-uuid", {"name": "x"}), 400)
    assert [w["name"] for w in await listed(api, colleague)] == ["hooks"]
    assert [w["name"] for w in await listed(api, stranger)] == ["hooks"]
    # No key: 401.
    no_key = await api.patch(f"{HOOKS}/{theirs['id']}", json={"name": "x"})
    assert_error(no_key, 401)


async def test_the_next_delivery_goes_to_the_patched_url(
    app: Any, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    with running_receiver() as old, running_receiver() as new:
        created = await create(api, tenant, url=old.url)
        response = await patch(api, tenant, created["id"], {"url": new.url})
        assert response.status_code == 200, response.text
        sent = await api.post(f"{HOOKS}/{created['id']}/test", headers=tenant.headers)
        assert sent.status_code == 202, sent.text
        await settle(app)
        assert [r.json()["eventType"] for r in new.received] == ["webhook.test"]
        assert old.received == []


# -- a subscription's own rate --------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_memory_limiter_counts_a_send_under_both_keys_or_neither() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock)
    own, user = ("subscription:s1", 1.0), ("u1:job.contact.scored", 5.0)
    assert limiter.try_acquire_all([own, user]) == 0
    # The subscription's key is full: the send waits out its window and counts nowhere.
    assert limiter.try_acquire_all([own, user]) == pytest.approx(WINDOW_SECONDS)
    for _ in range(4):  # the user's other four of five, to other subscriptions
        assert limiter.try_acquire("u1:job.contact.scored", 5.0) == 0
    assert limiter.try_acquire("u1:job.contact.scored", 5.0) > 0
    clock.now += WINDOW_SECONDS
    assert limiter.try_acquire_all([own, user]) == 0


def test_memory_limiter_spaces_a_rate_below_one() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock)
    assert limiter.try_acquire("subscription:s2", 0.5) == 0
    assert limiter.try_acquire("subscription:s2", 0.5) == pytest.approx(2 * WINDOW_SECONDS)
    clock.now += 2 * WINDOW_SECONDS - 0.01
    assert limiter.try_acquire("subscription:s2", 0.5) > 0
    clock.now += 0.01
    assert limiter.try_acquire("subscription:s2", 0.5) == 0


async def test_redis_limiter_takes_back_a_send_that_another_key_refuses() -> None:
    namespace = f"dialscore-test-{uuid.uuid4().hex[:12]}"
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        limiter = RedisRateLimiter(client, namespace)
        own, user = ("subscription:s1", 5.0), ("u1:job.completed", 1.0)
        assert await limiter.try_acquire_all([own, user]) == 0
        # The user's key is full: the count under the subscription's key is taken back.
        assert await limiter.try_acquire_all([own, user]) > 0
        assert await client.zcard(limiter.key("subscription:s1")) == 1
        assert await client.zcard(limiter.key("u1:job.completed")) == 1
    finally:
        keys = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_a_subscription_rate_spaces_its_deliveries_under_a_higher_user_rate(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as slow, running_receiver() as fast:
            limited, _ = await service.subscribe(tenant, slow.url, ["job.contact.scored"])
            free, _ = await service.subscribe(tenant, fast.url, ["job.contact.scored"])
            answer = await service.api.patch(
                f"{HOOKS}/{limited}", json={"rateLimit": 1}, headers=tenant.headers
            )
            assert answer.status_code == 200, answer.text
            await service.submit_job(tenant, many_contacts(4))
            await settle(service.app)
            starts = await _starts(service.db)
    assert len(slow.received) == 4 and len(fast.received) == 4
    mine = sorted(starts[limited])
    # At the recorded start of each send: one a second (and the margin) at most.
    assert busiest_second(mine) == 1, mine
    assert all(b - a >= 1.0 for a, b in pairwise(mine)), mine
    # The other subscription of the user keeps the user's rate: not spaced a second apart.
    assert busiest_second(starts[free]) >= 2, starts[free]


async def _starts(db: Database) -> dict[str, list[float]]:
    async with db.read() as session:
        rows = await session.execute(
            select(WebhookDelivery.subscription_id, WebhookAttempt.attempted_at).join(
                WebhookAttempt, WebhookAttempt.delivery_id == WebhookDelivery.id
            )
        )
        starts: dict[str, list[float]] = {}
        for subscription_id, at in rows:
            starts.setdefault(subscription_id, []).append(at.timestamp())
    return starts
