"""Erasing a job (P132, P133), on both databases: its contacts, their results, the rows of its
file it left out, its upload, the numbers its contacts carried, its processing message and the
bodies of its deliveries go; its deliveries still waiting never reach a real receiver on
127.0.0.1; the job answers 404 everywhere after; what is kept (the ledger, the calls reported,
the delivery log without bodies) is kept; and a worker processing the job when it is erased
stops without writing anything more."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, update

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.jobs import processing as jobs_processing
from dialscore.jobs import repository as jobs_repo
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.leases import LeaseLost
from dialscore.models import (
    CallOutcome,
    Contact,
    ContactNumber,
    CreditLedgerEntry,
    Job,
    OutboxMessage,
    RejectedRow,
    Upload,
    WebhookAttempt,
    WebhookDelivery,
)
from tests.conftest import SECRET
from tests.fakes import Answer, Received, running_receiver
from tests.support import (
    V2,
    Tenant,
    add_user,
    assert_error,
    contact,
    make_tenant,
    settle,
    state_of,
    submit,
)
from tests.test_leases import HeldSource

SCORED = "job.contact.scored"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Receivers on 127.0.0.1 allowed; a failed attempt is tried again an hour later, so that
    a delivery the receiver refused waits, pending, until the test makes it due."""
    return settings.model_copy(
        update={
            "webhook_allow_private": True,
            "webhook_retry_schedule": "3600",
            "webhook_retry_jitter": 0.0,
        }
    )


def people(prefix: str, count: int) -> list[dict[str, Any]]:
    return [
        contact(f"{prefix}{i}", "Lee", f"+1415555{2600 + i:04d}", companyAccount="Acme")
        for i in range(count)
    ]


async def new_job(api: httpx.AsyncClient, tenant: Tenant, contacts: list[Any]) -> str:
    answer = await submit(api, tenant, contacts)
    assert answer.status_code == 200, answer.text
    job_id: str = answer.json()["data"]["jobId"]
    return job_id


async def contact_ids(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> list[str]:
    answer = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    return [c["id"] for c in answer.json()["data"]["contacts"]]


def job_of_event(request: Received) -> str:
    job_id: str = request.json()["payload"]["job"]["id"]
    return job_id


async def count(db: Database, model: type[Any], *conditions: Any) -> int:
    async with db.read() as session:
        found = await session.scalar(select(func.count()).select_from(model).where(*conditions))
    return int(found or 0)


async def test_an_erased_job_leaves_nothing_and_its_waiting_deliveries_never_go_out(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    refusing = True

    def respond(request: Received, index: int) -> Answer:
        return Answer(503 if refusing else 200)

    with running_receiver(respond) as receiver:
        created = await api.post(
            f"{V2}/webhooks",
            json={"name": "crm", "url": receiver.url, "eventTypes": [SCORED]},
            headers=tenant.headers,
        )
        assert created.status_code == 201, created.text
        webhook_id = created.json()["data"]["id"]
        erased = await new_job(api, tenant, people("Gone", 3))
        kept = await new_job(api, tenant, people("Kept", 2))
        await settle(app)
        # Each event was tried once, refused, and waits an hour for its next attempt.
        assert len(receiver.received) == 5
        gone_contacts = await contact_ids(api, tenant, erased)
        kept_contacts = await contact_ids(api, tenant, kept)
        assert await count(db, ContactNumber, ContactNumber.contact_id.in_(gone_contacts)) == 3

        # Calls reported about a contact of each job; a row the job's file left out; the
        # upload it came from; the job's charge in the ledger.
        reported = await api.post(
            f"{V2}/calls",
            json={
                "calls": [
                    {
                        "number": "+14155552600",
                        "outcome": "connected",
                        "contactId": gone_contacts[0],
                    },
                    {
                        "number": "+14155552600",
                        "outcome": "connected",
                        "contactId": kept_contacts[0],
                    },
                ]
            },
            headers=tenant.headers,
        )
        assert reported.status_code == 200, reported.text
        async with db.unit_of_work() as session:
            await jobs_repo.add_rejected_rows(session, erased, [(3, ["Bob", ""], "No last name")])
            session.add(
                Upload(
                    id=str(uuid.uuid4()),
                    user_id=tenant.user_id,
                    client_id=tenant.client_id,
                    filename="gone.csv",
                    state="started",
                    file=None,
                    meta={"mapping": ["firstName"], "job_id": erased},
                    summaries={},
                    created_at=utcnow(),
                    updated_at=utcnow(),
                )
            )
        charged = await count(db, CreditLedgerEntry, CreditLedgerEntry.job_id == erased)
        assert charged == 1

        refusing = False
        deleted = await api.delete(f"{V2}/jobs/{erased}", headers=tenant.headers)
        assert deleted.status_code == 204, deleted.text
        assert deleted.content == b""

        # Every delivery due now: the kept job's go out, the erased job's never do.
        async with db.unit_of_work() as session:
            await session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.state == "pending")
                .values(available_at=utcnow())
            )
        await settle(app)
        received = list(receiver.received)

    later = received[5:]
    assert sorted(job_of_event(r) for r in later) == [kept, kept]
    assert [job_of_event(r) for r in received].count(erased) == 3  # the refused first tries

    # The job answers 404 on every job endpoint, version 1 included, and is not listed.
    for path in (f"/jobs/{erased}", f"/jobs/{erased}/contacts"):
        assert_error(await api.get(f"{V2}{path}", headers=tenant.headers), 404)
    assert_error(await api.post(f"{V2}/jobs/{erased}/rescore", headers=tenant.headers), 404)
    assert_error(await api.delete(f"{V2}/jobs/{erased}", headers=tenant.headers), 404)
    assert (await api.get(f"/api/jobs/{erased}", headers=tenant.headers)).status_code == 404
    listed = await api.get(f"{V2}/jobs", headers=tenant.headers)
    assert [j["id"] for j in listed.json()["data"]["jobs"]] == [kept]

    # Nothing of its contacts is left: rows, numbers, left-out rows, upload, message.
    assert await count(db, Job, Job.id == erased) == 0
    assert await count(db, Contact, Contact.job_id == erased) == 0
    assert await count(db, ContactNumber, ContactNumber.contact_id.in_(gone_contacts)) == 0
    assert await count(db, RejectedRow, RejectedRow.job_id == erased) == 0
    assert await count(db, Upload) == 0
    assert await count(db, OutboxMessage) == 0
    # The calls stay the client's, with the contact ids they were reported for; the ledger
    # keeps the charge.
    async with db.read() as session:
        calls = (await session.execute(select(CallOutcome.contact_id))).scalars().all()
    assert sorted(calls) == sorted([gone_contacts[0], kept_contacts[0]])
    assert await count(db, CreditLedgerEntry, CreditLedgerEntry.job_id == erased) == charged
    # The other job is whole.
    assert len(await contact_ids(api, tenant, kept)) == 2
    assert await count(db, ContactNumber, ContactNumber.contact_id.in_(kept_contacts)) == 2

    # Its deliveries stay in the log, cancelled and without bodies; their attempts stay.
    async with db.read() as session:
        rows = (
            await session.scalars(select(WebhookDelivery).where(WebhookDelivery.job_id == erased))
        ).all()
        kept_rows = (
            await session.scalars(select(WebhookDelivery).where(WebhookDelivery.job_id == kept))
        ).all()
    assert len(rows) == 3
    assert {(r.state, r.last_error, r.attempts) for r in rows} == {
        ("failed", "cancelled: its job was erased", 1)
    }
    assert {(r.payload is None, r.body_removed_reason) for r in rows} == {(True, "job_erased")}
    assert (
        await count(db, WebhookAttempt, WebhookAttempt.delivery_id.in_([r.id for r in rows])) == 3
    )
    assert {(r.state, r.payload is not None, r.body_removed_at) for r in kept_rows} == {
        ("delivered", True, None)
    }
    log = await api.get(f"{V2}/webhooks/{webhook_id}/deliveries", headers=tenant.headers)
    shown = {d["id"]: d for d in log.json()["data"]["deliveries"]}
    assert len(shown) == 5
    for row in rows:
        entry = shown[row.id]
        assert entry["state"] == "failed" and entry["bodyRemovedReason"] == "job_erased"
        assert entry["bodyRemovedAt"] is not None and len(entry["attempts"]) == 1
    retried = await api.post(
        f"{V2}/webhooks/{webhook_id}/deliveries/{rows[0].id}/retry", headers=tenant.headers
    )
    message = assert_error(retried, 409)
    assert message == (
        "the body of this delivery was removed when its job was erased: it cannot be sent again"
    )


async def test_another_users_unknown_or_malformed_job_is_not_erased(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    job_id = await new_job(api, tenant, people("Mine", 2))
    await settle(app)
    colleague = await add_user(db, SECRET, tenant, "colleague@acme.example")
    stranger = await make_tenant(db, SECRET, name="Other")
    for who in (colleague, stranger):
        assert_error(await api.delete(f"{V2}/jobs/{job_id}", headers=who.headers), 404)
    assert_error(await api.delete(f"{V2}/jobs/{uuid.uuid4()}", headers=tenant.headers), 404)
    assert_error(await api.delete(f"{V2}/jobs/not-a-job", headers=tenant.headers), 400)
    assert_error(await api.delete(f"{V2}/jobs/{job_id}"), 401)
    assert len(await contact_ids(api, tenant, job_id)) == 2
    # Its owner may; once.
    assert (await api.delete(f"{V2}/jobs/{job_id}", headers=tenant.headers)).status_code == 204
    assert_error(await api.delete(f"{V2}/jobs/{job_id}", headers=tenant.headers), 404)


async def test_a_job_erased_while_it_runs_stops_and_its_worker_writes_nothing_more(
    settings: Settings,
) -> None:
    app = create_app(settings, run_worker=False)
    async with app.router.lifespan_context(app):
        db = state_of(app).db
        tenant = await make_tenant(db, SECRET)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            hook = {
                "name": "crm",
                "url": "http://127.0.0.1:9/hook",
                "eventTypes": [SCORED, "job.completed"],
            }
            created = await api.post(f"{V2}/webhooks", json=hook, headers=tenant.headers)
            assert created.status_code == 201, created.text
            answer = await submit(api, tenant, people("Run", 3), kind="enrich")
            assert answer.status_code == 200, answer.text
            job_id = answer.json()["data"]["jobId"]
            async with db.read() as session:
                message = await session.scalar(select(OutboxMessage))
            assert message is not None

            # A worker of its own database takes the job and waits on enrichment.
            worker_db = Database(settings.resolved_database_url)
            try:
                source = HeldSource()
                running = asyncio.create_task(
                    jobs_processing.process_job(
                        worker_db,
                        job_id=job_id,
                        outbox_id=message.id,
                        settings=jobs_processing.ProcessingSettings(
                            batch_size=2, job_lease=timedelta(seconds=10)
                        ),
                        sources=[source],
                    )
                )
                await asyncio.wait_for(source.asked.wait(), timeout=10)
                numbers = await count(
                    db, ContactNumber, ContactNumber.client_id == tenant.client_id
                )
                assert numbers == 3  # indexed before the first batch
                deleted = await api.delete(f"{V2}/jobs/{job_id}", headers=tenant.headers)
                assert deleted.status_code == 204, deleted.text
                source.go.set()
                with pytest.raises(LeaseLost, match="erased"):
                    await asyncio.wait_for(running, timeout=10)
            finally:
                await worker_db.dispose()

        # Nothing was written back: no job, contacts, numbers, events or message.
        assert await count(db, Job) == 0
        assert await count(db, Contact) == 0
        assert await count(db, ContactNumber) == 0
        assert await count(db, WebhookDelivery) == 0
        assert await count(db, OutboxMessage) == 0
