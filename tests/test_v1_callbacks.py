"""Version 1 contact callbacks (D27) against real receivers on 127.0.0.1: the scored contact in
the v1 flat shape, signed with the user's callback secret, sent and retried by the webhook
delivery engine, written with the score so that a restart loses nothing.

Apps here allow private targets and retry within fractions of a second."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.jobs import processing as jobs_processing
from dialscore.kit.db import Database
from dialscore.models import (
    Contact,
    Job,
    OutboxMessage,
    User,
    WebhookAttempt,
    WebhookDelivery,
)
from dialscore.v1 import service as v1
from dialscore.webhooks import verify
from tests.conftest import SECRET
from tests.fakes import Answer, Received, running_receiver
from tests.processes import base_env, cli_error, cli_json
from tests.support import V2, Tenant, add_user, contact, make_tenant, settle, state_of
from tests.test_v1_submissions import add_person

SCORE = "/api/contacts/score"
FLAT_PHONE_KEYS = {
    f"{slot}{suffix}"
    for slot in ("phone", "phone2", "phone3", "phone4", "phone5")
    for suffix in ("", "Status", "Type", "Country", "Region")
}


@dataclass
class Service:
    app: FastAPI
    api: httpx.AsyncClient

    @property
    def db(self) -> Database:
        return state_of(self.app).db

    async def until(self, condition: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
        """Settles the app again and again until ``condition`` holds (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            await settle(self.app)
            if await condition():
                return
            if time.monotonic() > deadline:
                raise AssertionError("condition not reached in time")
            await asyncio.sleep(0.05)

    async def score(self, tenant: Tenant, contacts: list[dict[str, Any]]) -> str:
        response = await self.api.post(SCORE, json={"contacts": contacts}, headers=tenant.headers)
        assert response.status_code == 200, response.text
        assert response.json()["error"] is None
        job_id: str = response.json()["data"]["jobId"]
        return job_id

    async def callbacks(self) -> list[WebhookDelivery]:
        async with self.db.read() as session:
            rows = await session.scalars(
                select(WebhookDelivery).where(WebhookDelivery.kind == "callback")
            )
            return list(rows.all())


def fast(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "webhook_allow_private": True,
            "webhook_retry_schedule": "0.2,0.2,0.2",
            "webhook_timeout": 15.0,
        }
    )


@asynccontextmanager
async def running(settings: Settings, *, worker: bool = True) -> AsyncIterator[Service]:
    app = create_app(fast(settings), run_worker=worker)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            yield Service(app, api)


def cli_env(settings: Settings, tmp_path: Path) -> dict[str, str]:
    return base_env(
        tmp_path / "cli-var", DATABASE_URL=str(settings.database_url), SECRET_KEY=SECRET
    )


def signature(secret: str, body: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


async def test_callbacks_post_the_flat_contact_signed_with_the_secret_the_cli_shows(
    settings: Settings, tmp_path: Path
) -> None:
    async with running(settings) as service:
        tenant = await make_tenant(service.db, SECRET)
        with running_receiver() as receiver:
            ann = contact(
                "Ann",
                "Lee",
                "+14155552671",
                phoneType="cell",
                leadId="L-1",
                fsTotalCalls=4,
                callbackUrl=receiver.url,
            )
            bo = contact("Bo", "Chan", "+14155550123")
            cy = contact("Cy", "Doe", "+14155550124", callbackUrl=f"{receiver.url}?who=cy")
            job_id = await service.score(tenant, [ann, bo, cy])

            async def both_arrived() -> bool:
                return len(receiver.received) >= 2

            await service.until(both_arrived)
            received = sorted(receiver.received, key=lambda r: r.target)
        listed = await service.api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
        contacts = {c["firstName"]: c for c in listed.json()["data"]["contacts"]}
        async with service.db.unit_of_work() as session:
            from_service = await v1.callback_secret(
                session, user_id=tenant.user_id, server_secret=SECRET
            )
    env = cli_env(settings, tmp_path)
    args = ["admin", "show-callback-secret", "--user", tenant.user_id]
    shown = await asyncio.to_thread(cli_json, args, env=env, cwd=tmp_path)
    assert set(shown) == {"userId", "callbackSecret"}
    assert shown["userId"] == tenant.user_id
    secret = shown["callbackSecret"]
    assert secret.startswith("cbsec_") and secret == from_service
    # Shown again, it is the same secret.
    assert (await asyncio.to_thread(cli_json, args, env=env, cwd=tmp_path)) == shown

    assert [r.target for r in received] == ["/hook", "/hook?who=cy"]
    for request in received:
        header = request.headers["x-service-signature"]
        assert header == signature(secret, request.body)
        assert verify(secret, request.body, header)
        assert not verify(secret + "x", request.body, header)
        assert request.headers["content-type"] == "application/json"
        assert request.headers["user-agent"].startswith("Service-Webhooks/")
    body = received[0].json()
    # The body is the contact itself in the v1 flat shape: no phones array, no envelope.
    assert "phones" not in body and "bestPhone" not in body and "payload" not in body
    assert set(body) >= FLAT_PHONE_KEYS | {"id", "jobId", "leadStatus", "firstName"}
    v2_ann = contacts["Ann"]
    assert body["id"] == v2_ann["id"] and body["jobId"] == job_id
    assert (body["phone"], body["phoneType"], body["phoneCountry"], body["phoneRegion"]) == (
        "+14155552671",
        "mobile",
        "US",
        "US",
    )
    assert body["phoneStatus"] == v2_ann["phones"][0]["status"] is not None
    assert body["phone2"] is None and body["phone2Status"] is None
    assert body["leadStatus"] == v2_ann["leadStatus"]
    assert (body["leadId"], body["fsTotalCalls"], body["unmappedFields"]) == ("L-1", 4, {})
    assert body["callbackUrl"] == ann["callbackUrl"]
    assert received[1].json()["firstName"] == "Cy"


async def test_a_callback_answered_500_is_retried_with_the_same_bytes(
    settings: Settings,
) -> None:
    def first_fails(request: Received, index: int) -> Answer:
        return Answer(500) if index == 0 else Answer(200)

    async with running(settings) as service:
        tenant = await make_tenant(service.db, SECRET)
        with running_receiver(first_fails) as receiver:
            await service.score(tenant, [contact(callbackUrl=receiver.url)])

            async def delivered() -> bool:
                rows = await service.callbacks()
                return len(rows) == 1 and rows[0].state == "delivered"

            await service.until(delivered)
            received = list(receiver.received)
        (row,) = await service.callbacks()
        async with service.db.read() as session:
            attempts = (
                await session.scalars(
                    select(WebhookAttempt)
                    .where(WebhookAttempt.delivery_id == row.id)
                    .order_by(WebhookAttempt.number)
                )
            ).all()
    assert len(received) == 2
    assert received[0].body == received[1].body
    assert received[0].headers["x-service-signature"] == received[1].headers["x-service-signature"]
    assert (row.attempts, row.last_status_code, row.subscription_id) == (2, 200, None)
    assert [(a.number, a.status_code) for a in attempts] == [(1, 500), (2, 200)]
    assert attempts[0].error == "receiver answered 500"


async def test_the_callback_is_written_with_the_score_and_survives_a_restart(
    settings: Settings,
) -> None:
    with running_receiver() as receiver:
        # No worker: the job is processed here, as a worker would, and nothing is sent.
        async with running(settings, worker=False) as service:
            tenant = await make_tenant(service.db, SECRET)
            job_id = await service.score(tenant, [contact(callbackUrl=receiver.url)])
            async with service.db.read() as session:
                message = (await session.scalars(select(OutboxMessage))).one()
            await jobs_processing.process_job(
                service.db,
                job_id=job_id,
                outbox_id=message.id,
                settings=jobs_processing.ProcessingSettings(
                    batch_size=10, job_lease=timedelta(seconds=30)
                ),
            )
            async with service.db.read() as session:
                scored = (await session.scalars(select(Contact))).one()
            (row,) = await service.callbacks()
            assert scored.state == "scored"
            assert (row.state, row.attempts, row.target_url) == ("pending", 0, receiver.url)
            assert row.payload["id"] == scored.id
            assert row.payload["phoneStatus"] == scored.phones[0]["status"] is not None
            assert receiver.received == []
        # A new process on the same database sends what the first one left.
        async with running(settings) as restarted:

            async def arrived() -> bool:
                return len(receiver.received) == 1

            await restarted.until(arrived)
            (row,) = await restarted.callbacks()
        assert receiver.received[0].json()["id"] == scored.id
        assert row.state == "delivered"


async def test_webhook_deliveries_listing_and_replay_ignore_callbacks(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await make_tenant(service.db, SECRET)
        with running_receiver() as receiver:
            created = await service.api.post(
                f"{V2}/webhooks",
                json={
                    "name": "crm",
                    "url": receiver.url,
                    "eventTypes": ["job.contact.scored", "job.completed"],
                },
                headers=tenant.headers,
            )
            assert created.status_code == 201, created.text
            webhook_id = created.json()["data"]["id"]
            await service.score(
                tenant,
                [
                    contact("Ann", "Lee", "+14155552671", callbackUrl=f"{receiver.url}?cb"),
                    contact("Bo", "Chan", "+14155550123", callbackUrl=f"{receiver.url}?cb"),
                ],
            )

            async def all_arrived() -> bool:
                return len(receiver.received) == 5

            await service.until(all_arrived)
            callbacks = [r for r in receiver.received if r.target.endswith("?cb")]
            events = [r for r in receiver.received if not r.target.endswith("?cb")]
            assert len(callbacks) == 2
            assert sorted(e.json()["eventType"] for e in events) == [
                "job.completed",
                "job.contact.scored",
                "job.contact.scored",
            ]
            # Events keep the envelope; callbacks are the bare contact.
            assert all(set(e.json()) == {"payload", "eventType", "timestamp", "apiVersion", "id"}
                       for e in events)  # fmt: skip

            listed = await service.api.get(
                f"{V2}/webhooks/{webhook_id}/deliveries", headers=tenant.headers
            )
            assert listed.status_code == 200, listed.text
            deliveries = listed.json()["data"]["deliveries"]
            assert len(deliveries) == 3
            assert {d["eventType"] for d in deliveries} == {"job.contact.scored", "job.completed"}
            replay = await service.api.post(
                f"{V2}/webhooks/{webhook_id}/deliveries/{deliveries[0]['id']}/retry",
                headers=tenant.headers,
            )
            assert replay.status_code == 202, replay.text
            (callback_row, _) = await service.callbacks()
            foreign = await service.api.post(
                f"{V2}/webhooks/{webhook_id}/deliveries/{callback_row.id}/retry",
                headers=tenant.headers,
            )
            assert foreign.status_code == 404

            # Version 2 has no callbacks: the field is kept as an unmapped one, nothing posts.
            v2 = await service.api.post(
                f"{V2}/contacts/score",
                json={"contacts": [contact("Cy", "Doe", "+14155550124", callbackUrl=receiver.url)]},
                headers=tenant.headers,
            )
            assert v2.status_code == 200, v2.text
            await settle(service.app)
            assert len(await service.callbacks()) == 2

            deleted = await service.api.delete(
                f"{V2}/webhooks/{webhook_id}", headers=tenant.headers
            )
            assert deleted.status_code == 204
            assert len(await service.callbacks()) == 2


async def test_each_user_has_one_sealed_secret_made_on_first_use(
    db: Database, tenant: Tenant, settings: Settings, tmp_path: Path
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@acme.com")
    async with db.unit_of_work() as session:
        first = await v1.callback_secret(session, user_id=tenant.user_id, server_secret=SECRET)
    async with db.unit_of_work() as session:
        again = await v1.callback_secret(session, user_id=tenant.user_id, server_secret=SECRET)
        other = await v1.callback_secret(session, user_id=colleague.user_id, server_secret=SECRET)
    assert first == again != other
    async with db.read() as session:
        sealed = await session.scalar(
            select(User.callback_secret_ciphertext).where(User.id == tenant.user_id)
        )
    assert sealed is not None and first not in sealed
    message = await asyncio.to_thread(
        cli_error,
        ["admin", "show-callback-secret", "--user", "no-such-user"],
        env=cli_env(settings, tmp_path),
        cwd=tmp_path,
    )
    assert message == "no user with id no-such-user"


async def test_enriched_contacts_call_back_with_the_found_numbers_and_rejected_ones_do_not(
    settings: Settings,
) -> None:
    async with running(settings) as service:
        tenant = await make_tenant(service.db, SECRET)
        await add_person(
            service.db,
            "dir-ann",
            [{"number": "+12125557188", "type": "mobile"}],
            first_name="Ann",
            last_name="Lee",
            company="Acme Inc.",
        )
        with running_receiver() as receiver:
            found = {
                "firstName": "Ann",
                "lastName": "Lee",
                "phone": "+14155550234",
                "companyInfo": {"companyAccount": "Acme"},
                "callbackUrl": f"{receiver.url}?ann",
            }
            nothing = {
                "firstName": "Zed",
                "lastName": "Quill",
                "companyAccount": "Nowhere",
                "callbackUrl": f"{receiver.url}?zed",
            }
            response = await service.api.post(
                "/api/contacts/enrich", json={"contacts": [found, nothing]}, headers=tenant.headers
            )
            assert response.status_code == 200, response.text

            async def finished() -> bool:
                async with service.db.read() as session:
                    job = await session.get(Job, response.json()["data"]["jobId"])
                    return job is not None and job.status == "Finalized"

            await service.until(finished)
            received = list(receiver.received)
    assert [r.target for r in received] == ["/hook?ann"]
    body = received[0].json()
    assert (body["phone"], body["phone2"], body["phone2Type"]) == (
        "+14155550234",
        "+12125557188",
        "Service Enriched Phone 1",
    )
    assert body["phone2Status"] is not None
    assert body["companyAccount"] == "Acme"
    assert body["enrichmentContactId"] == "dir-ann"
