"""Standard Webhooks headers beside the spec's signature (P120), and secret rotation (P121),
on both databases, against real receivers on 127.0.0.1: what is sent is checked with the
maintained libraries (``standardwebhooks``, ``svix``) as a receiver runs them, unchanged.

A day passing is written into the database (the rotation's time moved back), not slept."""

from __future__ import annotations

import base64
import re
import secrets
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import standardwebhooks
import svix.webhooks
from alembic import command
from sqlalchemy import select, update

from dialscore.config import Settings
from dialscore.kit.clock import isoformat, utcnow
from dialscore.kit.db import Database, sync_url
from dialscore.migrations import alembic_config, upgrade
from dialscore.models import WebhookSubscription
from dialscore.v1 import service as v1
from dialscore.webhooks import service as webhooks
from dialscore.webhooks import sign, signing_key, standard_signature, verify
from tests.conftest import DATABASES, SECRET
from tests.fakes import Received, running_receiver
from tests.processes import fresh_postgres_database
from tests.support import V2, Tenant, add_user, assert_error, contact, many_contacts, settle
from tests.test_migrations import sql
from tests.test_webhook_delivery import Service, running, statuses

NEW_SECRET = re.compile(r"whsec_[A-Za-z0-9+/]{43}=")
SECRET_BYTES = 32


def libraries(secret: str | bytes) -> list[Any]:
    """The two verifiers a receiver would use, keyed by ``secret`` as their users give it."""
    return [standardwebhooks.Webhook(secret), svix.webhooks.Webhook(secret)]


def verifies(secret: str | bytes, request: Received) -> bool:
    """Whether both libraries accept the request under ``secret`` (and agree)."""
    accepted = []
    for library in libraries(secret):
        try:
            library.verify(request.body, request.headers)
        except standardwebhooks.WebhookVerificationError:
            accepted.append(False)
        else:
            accepted.append(True)
    assert accepted[0] == accepted[1], accepted
    return accepted[0]


def signatures(request: Received) -> list[str]:
    return request.headers["webhook-signature"].split(" ")


def assert_spec_signature(secret: str, request: Received) -> None:
    """X-Service-Signature is exactly the spec's: Base64 HMAC-SHA256 of the raw body, keyed by
    the secret as it is shown."""
    header = request.headers["x-service-signature"]
    assert verify(secret, request.body, header)
    assert header == sign(secret, request.body)


async def rotate(service: Service, tenant: Tenant, webhook_id: str) -> dict[str, Any]:
    answer = await service.api.post(
        f"{V2}/webhooks/{webhook_id}/rotate-secret", headers=tenant.headers
    )
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()["data"]
    return data


async def send_test_event(
    service: Service, tenant: Tenant, webhook_id: str, receiver: Any
) -> Received:
    """Sends a webhook.test event and returns it as it arrived."""
    before = len(receiver.received)
    sent = await service.api.post(f"{V2}/webhooks/{webhook_id}/test", headers=tenant.headers)
    assert sent.status_code == 202, sent.text
    await settle(service.app)
    assert len(receiver.received) == before + 1
    request: Received = receiver.received[-1]
    assert request.json()["id"] == sent.json()["data"]["id"]
    return request


async def move_rotation_back(db: Database, webhook_id: str, by: timedelta) -> None:
    """As if the last rotation had happened ``by`` earlier."""
    async with db.unit_of_work() as session:
        rotated = await session.scalar(
            select(WebhookSubscription.secret_rotated_at).where(
                WebhookSubscription.id == webhook_id
            )
        )
        assert rotated is not None
        await session.execute(
            update(WebhookSubscription)
            .where(WebhookSubscription.id == webhook_id)
            .values(secret_rotated_at=rotated - by)
        )


# -- the headers of every delivery -----------------------------------------------------------------


async def test_deliveries_verify_with_standardwebhooks_svix_and_the_spec_signature(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            _, secret = await service.subscribe(tenant, receiver.url)
            await service.submit_job(tenant, many_contacts(3))
            await settle(service.app)
            received = list(receiver.received)
    assert NEW_SECRET.fullmatch(secret), secret
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == SECRET_BYTES
    assert len(received) == 4
    assert {r.json()["eventType"] for r in received} == {"job.contact.scored", "job.completed"}
    for request in received:
        envelope = request.json()
        assert request.headers["webhook-id"] == envelope["id"]
        assert abs(int(request.headers["webhook-timestamp"]) - time.time()) < 60
        assert len(signatures(request)) == 1
        assert standardwebhooks.Webhook(secret).verify(request.body, request.headers) == envelope
        svix.webhooks.Webhook(secret).verify(request.body, request.headers)
        assert_spec_signature(secret, request)
        # Another body, id, or secret is refused.
        forged = Received(**{**request.__dict__, "body": request.body.replace(b"{", b"{ ", 1)})
        assert not verifies(secret, forged)
        other_id = {**request.headers, "webhook-id": "00000000-0000-4000-8000-000000000000"}
        assert not verifies(secret, Received(**{**request.__dict__, "headers": other_id}))
        assert not verifies("whsec_" + base64.b64encode(bytes(32)).decode(), request)


async def test_every_attempt_is_signed_anew_with_the_same_webhook_id(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver(statuses(503, 500)) as receiver:
            webhook_id, secret = await service.subscribe(tenant, receiver.url, ["job.completed"])
            await service.submit_job(tenant, [contact()])
            (delivery,) = await service.final_deliveries(tenant, webhook_id, 1)
            received = list(receiver.received)
    assert delivery["state"] == "delivered" and delivery["attemptCount"] == 3
    assert len(received) == 3
    assert {r.headers["webhook-id"] for r in received} == {delivery["id"]}
    assert {r.body for r in received} == {received[0].body}
    # The spec's signature is of the body alone: the same on every attempt.
    assert len({r.headers["x-service-signature"] for r in received}) == 1
    key = signing_key(secret)
    for request in received:
        assert verifies(secret, request)
        timestamp = int(request.headers["webhook-timestamp"])
        assert signatures(request) == [
            standard_signature(key, delivery["id"], timestamp, request.body)
        ]


async def test_a_secret_made_before_the_standard_headers_keys_them_by_its_own_bytes(
    settings: Settings,
) -> None:
    """A subscription made before P120 has ``whsec_`` and 43 URL-safe characters: not Base64
    the libraries can read, so webhook-signature is keyed by the secret's UTF-8 bytes, which
    a receiver passes to the libraries as bytes."""
    old = "whsec_" + secrets.token_urlsafe(32)
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            webhook_id, _ = await service.subscribe(tenant, receiver.url)
            async with service.db.unit_of_work() as session:
                await session.execute(
                    update(WebhookSubscription)
                    .where(WebhookSubscription.id == webhook_id)
                    .values(secret_ciphertext=webhooks.secret_box(SECRET).seal(old))
                )
            before = await send_test_event(service, tenant, webhook_id, receiver)
            new = (await rotate(service, tenant, webhook_id))["secret"]
            during = await send_test_event(service, tenant, webhook_id, receiver)
    assert signing_key(old) == old.encode()
    assert verifies(old.encode(), before)
    assert_spec_signature(old, before)
    # After a rotation the new secret is of the new form, taken by the libraries as it is;
    # the old one still checks webhook-signature for a day, as its bytes.
    assert NEW_SECRET.fullmatch(new)
    assert verifies(new, during) and verifies(old.encode(), during)
    assert_spec_signature(new, during)


async def test_version_1_callbacks_carry_the_headers_keyed_by_the_callback_secret(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            sent = await service.api.post(
                "/api/contacts/score",
                json={"contacts": [contact(callbackUrl=receiver.url)]},
                headers=tenant.headers,
            )
            assert sent.status_code == 200, sent.text
            await settle(service.app)
            (request,) = receiver.received
        async with service.db.unit_of_work() as session:
            secret = await v1.callback_secret(session, user_id=tenant.user_id, server_secret=SECRET)
    assert secret.startswith("cbsec_")
    assert_spec_signature(secret, request)
    assert verifies(secret.encode(), request)
    # Its webhook-id is the callback's delivery, not the contact (whose id is in the body).
    assert re.fullmatch(r"[0-9a-f-]{36}", request.headers["webhook-id"])
    assert request.headers["webhook-id"] != request.json()["id"]


# -- rotation --------------------------------------------------------------------------------------


async def test_a_rotation_signs_with_both_secrets_for_a_day_then_with_the_new_one(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            webhook_id, old = await service.subscribe(tenant, receiver.url)
            before = await send_test_event(service, tenant, webhook_id, receiver)
            rotated_at = utcnow()
            rotated = await rotate(service, tenant, webhook_id)
            new = rotated["secret"]
            await service.submit_job(tenant, [contact()])
            await settle(service.app)
            during = receiver.received[1:]
            listed = await service.api.get(f"{V2}/webhooks", headers=tenant.headers)

            await move_rotation_back(service.db, webhook_id, timedelta(hours=24, seconds=1))
            after = await send_test_event(service, tenant, webhook_id, receiver)

    assert NEW_SECRET.fullmatch(new) and new != old
    assert set(rotated) == {
        "id", "name", "url", "eventTypes", "triggers", "status", "createdAt", "rateLimit",
        "disabledAt", "disabledReason", "secret", "previousSecretExpiresAt",
    }  # fmt: skip
    assert rotated["id"] == webhook_id and rotated["status"] == "active"
    expires = rotated["previousSecretExpiresAt"]
    assert isoformat(rotated_at + timedelta(hours=24)) <= expires
    assert expires <= isoformat(utcnow() + timedelta(hours=24))
    # Shown once: never listed.
    assert "secret" not in listed.json()["data"]["webhooks"][0]

    assert verifies(old, before) and not verifies(new, before)
    assert_spec_signature(old, before)

    assert len(during) == 2  # the contact's event and the job's
    for request in during:
        assert len(signatures(request)) == 2
        assert verifies(new, request) and verifies(old, request)
        assert_spec_signature(new, request)
        assert not verify(old, request.body, request.headers["x-service-signature"])
        timestamp = int(request.headers["webhook-timestamp"])
        assert signatures(request) == [
            standard_signature(
                signing_key(key), request.headers["webhook-id"], timestamp, request.body
            )
            for key in (new, old)
        ]

    assert len(signatures(after)) == 1
    assert verifies(new, after) and not verifies(old, after)
    assert_spec_signature(new, after)


async def test_rotating_twice_in_a_day_keeps_only_the_newest_previous_secret(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await service.tenant(rate=50)
        with running_receiver() as receiver:
            webhook_id, first = await service.subscribe(tenant, receiver.url, ["job.completed"])
            second = (await rotate(service, tenant, webhook_id))["secret"]
            await move_rotation_back(service.db, webhook_id, timedelta(hours=20))
            third = await rotate(service, tenant, webhook_id)
            request = await send_test_event(service, tenant, webhook_id, receiver)
    assert len({first, second, third["secret"]}) == 3
    assert verifies(third["secret"], request) and verifies(second, request)
    assert not verifies(first, request)
    assert_spec_signature(third["secret"], request)
    # The day is counted from the latest rotation.
    assert third["previousSecretExpiresAt"] >= isoformat(utcnow() + timedelta(hours=23))


async def test_rotating_is_the_owners_alone(settings: Settings) -> None:
    async with running(settings) as service:
        tenant = await service.tenant()
        other = await add_user(service.db, SECRET, tenant, "other@acme.example")
        theirs, _ = await service.subscribe(other, "https://93.184.215.14/hook")
        path = f"{V2}/webhooks/{theirs}/rotate-secret"
        async with service.db.read() as session:
            sealed = await session.scalar(
                select(WebhookSubscription.secret_ciphertext).where(
                    WebhookSubscription.id == theirs
                )
            )
        assert "not found" in assert_error(
            await service.api.post(path, headers=tenant.headers), 404
        )
        unknown = f"{V2}/webhooks/00000000-0000-4000-8000-000000000000/rotate-secret"
        assert_error(await service.api.post(unknown, headers=tenant.headers), 404)
        assert_error(
            await service.api.post(f"{V2}/webhooks/x/rotate-secret", headers=tenant.headers), 400
        )
        without_key = await service.api.post(path)
        assert_error(without_key, 401)
        assert without_key.headers["www-authenticate"].startswith("Bearer")
        wrong_key = await service.api.post(path, headers={"Authorization": "Bearer nope"})
        assert_error(wrong_key, 401)
        async with service.db.read() as session:
            row = await session.get(WebhookSubscription, theirs)
        assert row is not None
        assert row.secret_ciphertext == sealed and row.secret_rotated_at is None
        assert row.previous_secret_ciphertext is None
        # Its owner may.
        rotated = await service.api.post(path, headers=other.headers)
        assert rotated.status_code == 200, rotated.text


# -- the migration ---------------------------------------------------------------------------------


@pytest.fixture(params=DATABASES)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of its own, not yet migrated."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'migrated.db'}"
        return
    with fresh_postgres_database() as url:
        yield url


def test_migration_0017_adds_the_previous_secret_and_keeps_subscriptions(empty_url: str) -> None:
    url = empty_url
    command.upgrade(alembic_config(url), "0016")
    engine = sa.create_engine(sync_url(url))
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO clients (id, name, plan_name, overrides, credits, "
                                 "created_at) VALUES ('c', 'Acme', 'team', '{}', 0, "
                                 "'2026-11-01 00:00:00')"))  # fmt: skip
            conn.execute(sa.text("INSERT INTO users (id, client_id, email, role, created_at) "
                                 "VALUES ('u', 'c', 'a@acme.example', 'admin', "
                                 "'2026-11-01 00:00:00')"))  # fmt: skip
            conn.execute(sa.text("INSERT INTO webhook_subscriptions (id, client_id, user_id, "
                                 "name, url, event_types, status, secret_ciphertext, created_at, "
                                 "updated_at) VALUES ('w', 'c', 'u', 'crm', 'https://x.example', "
                                 "'[\"job.completed\"]', 'active', 'sealed', "
                                 "'2026-11-01 00:00:00', '2026-11-01 00:00:00')"))  # fmt: skip
    finally:
        engine.dispose()
    upgrade(url)
    columns = "id, secret_ciphertext, previous_secret_ciphertext, secret_rotated_at"
    assert sql(url, f"SELECT {columns} FROM webhook_subscriptions") == [("w", "sealed", None, None)]
    command.downgrade(alembic_config(url), "0016")
    assert sql(url, "SELECT id, secret_ciphertext FROM webhook_subscriptions") == [("w", "sealed")]
    upgrade(url)
    assert sql(url, "SELECT count(*) FROM webhook_subscriptions") == [(1,)]
