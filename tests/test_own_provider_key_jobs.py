"""A client's own provider keys in its jobs (P204) and what each source was asked and found
(P205): the worker's waterfall calls the provider with the client's key, the contacts found
with it cost nothing, another client's jobs still use the operator's key, and each batch's
counts are kept per source."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from decimal import Decimal

import httpx
import pytest
from sqlalchemy import select
from structlog.testing import capture_logs

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.enrichment import client_settings
from dialscore.jobs import tasks
from dialscore.jobs.refunds import OWN_KEY_REASON, REFUND_REASON
from dialscore.jobs.service import PROCESS_JOB
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import (
    Client,
    ClientProviderKey,
    Contact,
    CreditLedgerEntry,
    EnrichmentTally,
    OutboxMessage,
)
from dialscore.worker.context import TaskContext
from tests.conftest import SECRET
from tests.fakes import Received
from tests.support import V2, Tenant, amount, make_tenant, submit
from tests.test_enrichment_providers import PDL_KEY, FakePDL, PdlPerson, pdl_record

CLIENT_KEY = "client-own-pdl-key-7788"
SECOND_KEY = "client-second-key-0002"
PRICE = Decimal("0.05")
# Two people the fake knows, with numbers; the third contact of each job is unknown to it.
PEOPLE = [
    PdlPerson(pdl_record("pdl_own_1", "Ada", "Found", "ada@acme.com", numbers=["+12127364512"]), 9),
    PdlPerson(
        pdl_record(
            "pdl_own_2",
            "Bo",
            "Found",
            "bo@acme.com",
            mobile="+14156983341",
            numbers=["+14156983341"],
        ),
        9,
    ),
]
CONTACTS = [
    {"firstName": "Ada", "lastName": "Found", "email": "ada@acme.com", "companyAccount": "Acme"},
    {"firstName": "Bo", "lastName": "Found", "email": "bo@acme.com", "companyAccount": "Acme"},
    {"firstName": "Cy", "lastName": "Unknown", "email": "cy@acme.com", "companyAccount": "Acme"},
]


class TwoKeyPDL(FakePDL):
    """PDL that takes the operator's key and the client's, so that a test can see which one
    each request came with."""

    def authorized(self, request: Received) -> bool:
        return request.headers.get("x-api-key", "") in (PDL_KEY, CLIENT_KEY, SECOND_KEY)

    def keys_used(self) -> list[str]:
        return [request.headers.get("x-api-key", "") for request in self.received]


@pytest.fixture
def pdl_fake() -> Iterator[TwoKeyPDL]:
    with TwoKeyPDL(PEOPLE) as server:
        yield server


@dataclass
class Service:
    settings: Settings
    db: Database
    api: httpx.AsyncClient


@pytest.fixture
async def service(settings: Settings, pdl_fake: TwoKeyPDL) -> AsyncIterator[Service]:
    # The operator's own PDL key is set: only a client without its own key uses it.
    configured = settings.model_copy(
        update={
            "enrichment_sources": "history,pdl",
            "pdl_api_key": PDL_KEY,
            "pdl_base_url": pdl_fake.url,
            # A loaded machine must not make the fake look down.
            "pdl_timeout": 60.0,
        }
    )
    app = create_app(configured, run_worker=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            yield Service(configured, app.state.dialscore.db, api)


async def tenant_at_price(service: Service) -> Tenant:
    tenant = await make_tenant(service.db, SECRET)
    async with service.db.unit_of_work() as session:
        client = await session.get(Client, tenant.client_id)
        assert client is not None
        client.overrides = {**client.overrides, "cost_per_contact": str(PRICE)}
    return tenant


async def run_job(service: Service, tenant: Tenant) -> str:
    """Submits the three contacts for enrichment and runs the job as a worker does."""
    response = await submit(service.api, tenant, CONTACTS, kind="enrich")
    assert response.status_code == 200, response.text
    assert response.json()["data"]["acceptedRecordCount"] == 3, response.text
    job_id: str = response.json()["data"]["jobId"]
    async with service.db.read() as session:
        messages = await session.scalars(
            select(OutboxMessage).where(OutboxMessage.actor == PROCESS_JOB)
        )
        found = list(messages)
        (message,) = [m for m in found if m.payload["job_id"] == job_id]
    context = TaskContext(service.settings, Database(service.settings.resolved_database_url))
    try:
        await tasks.process_job(context, outbox_id=message.id, job_id=job_id)
    finally:
        await context.close()
    return job_id


async def ledger(db: Database, job_id: str) -> list[tuple[Decimal, str]]:
    async with db.read() as session:
        rows = await session.scalars(
            select(CreditLedgerEntry)
            .where(CreditLedgerEntry.job_id == job_id)
            .order_by(CreditLedgerEntry.id)
        )
        return [(row.delta, row.reason) for row in rows]


async def tallies(db: Database, job_id: str) -> dict[tuple[str, bool], tuple[int, int, int]]:
    async with db.read() as session:
        rows = await session.scalars(
            select(EnrichmentTally).where(EnrichmentTally.job_id == job_id)
        )
        return {(r.source, r.own_key): (r.tried, r.hits, r.named) for r in rows}


async def found_by(db: Database, job_id: str) -> dict[str, tuple[str, str | None, bool]]:
    async with db.read() as session:
        rows = await session.scalars(select(Contact).where(Contact.job_id == job_id))
        return {
            str(c.fields["email"]): (c.state, c.enrichment_source, c.enrichment_own_key)
            for c in rows
        }


async def set_key(service: Service, tenant: Tenant, key: str | None) -> None:
    async with service.db.unit_of_work() as session:
        if key is None:
            await client_settings.clear_provider_key(
                session, client_id=tenant.client_id, provider="pdl"
            )
        else:
            await client_settings.set_provider_key(
                session,
                client_id=tenant.client_id,
                provider="pdl",
                api_key=key,
                server_secret=SECRET,
                user_id=tenant.user_id,
                now=utcnow(),
            )


async def test_the_clients_own_key_is_used_and_what_it_finds_costs_nothing(
    service: Service, pdl_fake: TwoKeyPDL
) -> None:
    tenant = await tenant_at_price(service)
    await set_key(service, tenant, CLIENT_KEY)

    job_id = await run_job(service, tenant)

    # Every request to the provider carried the client's key, none the operator's.
    assert pdl_fake.keys_used() == [CLIENT_KEY] * 3
    assert await found_by(service.db, job_id) == {
        "ada@acme.com": ("scored", "pdl", True),
        "bo@acme.com": ("scored", "pdl", True),
        "cy@acme.com": ("rejected", None, False),
    }
    # Charged for three, given back one for the contact nothing was found for and two for
    # those found with the client's key: the job cost nothing.
    assert await ledger(service.db, job_id) == [
        (-3 * PRICE, "enrichment submission"),
        (PRICE, REFUND_REASON),
        (2 * PRICE, OWN_KEY_REASON),
    ]
    job = (await service.api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)).json()["data"]
    assert amount(job["creditsRefunded"]) == 3 * PRICE
    credits = await service.api.get(f"{V2}/account/credits", headers=tenant.headers)
    assert amount(credits.json()["data"]["credits"]) == 1000
    # History was asked about all three and found none; PDL with the client's key about all
    # three, and found two.
    assert await tallies(service.db, job_id) == {
        ("history", False): (3, 0, 0),
        ("pdl", True): (3, 2, 2),
    }


async def test_a_client_without_its_own_key_uses_the_operators_and_pays(
    service: Service, pdl_fake: TwoKeyPDL
) -> None:
    with_key = await tenant_at_price(service)
    await set_key(service, with_key, CLIENT_KEY)
    without = await tenant_at_price(service)

    job_id = await run_job(service, without)

    assert pdl_fake.keys_used() == [PDL_KEY] * 3
    assert await ledger(service.db, job_id) == [
        (-3 * PRICE, "enrichment submission"),
        (PRICE, REFUND_REASON),
    ]
    assert await tallies(service.db, job_id) == {
        ("history", False): (3, 0, 0),
        ("pdl", False): (3, 2, 2),
    }
    assert (await found_by(service.db, job_id))["ada@acme.com"] == ("scored", "pdl", False)


async def test_a_key_changed_or_removed_counts_from_the_next_job(
    service: Service, pdl_fake: TwoKeyPDL
) -> None:
    # After the first job, history finds two of the three contacts: the provider is asked
    # about the third alone.
    tenant = await tenant_at_price(service)
    await run_job(service, tenant)
    assert set(pdl_fake.keys_used()) == {PDL_KEY}

    await set_key(service, tenant, CLIENT_KEY)
    pdl_fake.received.clear()
    await run_job(service, tenant)
    assert set(pdl_fake.keys_used()) == {CLIENT_KEY}

    await set_key(service, tenant, SECOND_KEY)
    pdl_fake.received.clear()
    await run_job(service, tenant)
    assert set(pdl_fake.keys_used()) == {SECOND_KEY}

    await set_key(service, tenant, None)
    pdl_fake.received.clear()
    await run_job(service, tenant)
    assert set(pdl_fake.keys_used()) == {PDL_KEY}


async def test_the_clients_order_decides_who_is_asked_first(
    service: Service, pdl_fake: TwoKeyPDL
) -> None:
    tenant = await tenant_at_price(service)
    # A first job: the three contacts become history; the next job's Ada and Bo are found
    # there when history goes first.
    await run_job(service, tenant)
    second = await run_job(service, tenant)
    assert (await tallies(service.db, second))[("history", False)] == (3, 2, 2)
    assert (await tallies(service.db, second))[("pdl", False)] == (1, 0, 0)

    async with service.db.unit_of_work() as session:
        await client_settings.set_enrichment_order(
            session, client_id=tenant.client_id, order=["pdl", "history"], settings=service.settings
        )
    third = await run_job(service, tenant)
    assert await tallies(service.db, third) == {
        ("pdl", False): (3, 2, 2),
        ("history", False): (1, 0, 0),
    }


async def test_a_refused_key_is_noted_and_the_job_goes_on_without_it(
    service: Service, pdl_fake: TwoKeyPDL
) -> None:
    tenant = await tenant_at_price(service)
    await set_key(service, tenant, "client-key-the-provider-refuses")

    with capture_logs() as logs:
        job_id = await run_job(service, tenant)
    # The refusal's hint is about the client's key, not the operator's settings.
    (refusal,) = [entry for entry in logs if entry["event"] == "enrichment_provider_refused"]
    assert tenant.client_id in refusal["hint"]
    assert "DIALSCORE_PDL_API_KEY" not in refusal["hint"]
    assert "client-key-the-provider-refuses" not in repr(logs)

    # Refused: the job finished without the provider, and the operator's key was not used
    # in the client's place.
    assert set(pdl_fake.keys_used()) == {"client-key-the-provider-refuses"}
    assert {state for state, _, _ in (await found_by(service.db, job_id)).values()} == {"rejected"}
    assert await ledger(service.db, job_id) == [
        (-3 * PRICE, "enrichment submission"),
        (3 * PRICE, REFUND_REASON),
    ]
    async with service.db.read() as session:
        stored = await session.get(ClientProviderKey, (tenant.client_id, "pdl"))
        assert stored is not None
        assert stored.refused_reason == "credentials refused (HTTP 401)"
        assert stored.refused_at is not None

    # Set again, the note is cleared.
    await set_key(service, tenant, CLIENT_KEY)
    async with service.db.read() as session:
        stored = await session.get(ClientProviderKey, (tenant.client_id, "pdl"))
        assert stored is not None
        assert (stored.refused_at, stored.refused_reason) == (None, None)


async def test_the_source_report_counts_what_the_fakes_answered(
    service: Service, pdl_fake: TwoKeyPDL
) -> None:
    """Two jobs through the worker's waterfall, one with the client's own key and one with
    the operator's, and a call reported to a number each found: the report's figures are
    exactly what the fake provider answered."""
    tenant = await tenant_at_price(service)
    await set_key(service, tenant, CLIENT_KEY)
    await run_job(service, tenant)
    await set_key(service, tenant, None)
    # The second job: history now finds Ada and Bo (their numbers from the first job), and
    # the operator's PDL is asked about Cy alone, and finds nothing.
    await run_job(service, tenant)
    calls = [
        {"number": "+12127364512", "outcome": "connected", "calledAt": utcnow().isoformat()},
        {"number": "+14156983341", "outcome": "no_answer", "calledAt": utcnow().isoformat()},
    ]
    reported = await service.api.post(f"{V2}/calls", json={"calls": calls}, headers=tenant.headers)
    assert reported.status_code in (200, 201, 202), reported.text

    answer = await service.api.get(f"{V2}/account/enrichment-report", headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    rows = {(row["source"], row["ownKey"]): row for row in data["sources"]}
    figures = {
        key: (row["tried"], row["hits"], row["named"], row["calls"], row["connects"])
        for key, row in rows.items()
    }
    # The calls came after both jobs: each counts once, for the newest contact that carries
    # its number (the second job's, found through history).
    assert figures == {
        ("history", False): (6, 2, 2, 2, 1),
        ("pdl", True): (3, 2, 2, 0, 0),
        ("pdl", False): (1, 0, 0, 0, 0),
    }
    assert amount(rows["pdl", True]["creditsCharged"]) == 2 * PRICE
    assert amount(rows["pdl", True]["creditsRefunded"]) == 2 * PRICE
    assert amount(rows["history", False]["creditsCharged"]) == 2 * PRICE
    assert amount(rows["history", False]["creditsRefunded"]) == 0
    assert data["unfound"]["contacts"] == 2
    assert amount(data["unfound"]["creditsRefunded"]) == 2 * PRICE
    assert data["totals"]["jobs"] == 2
    assert data["totals"]["contacts"] == 6
    assert amount(data["totals"]["creditsCharged"]) == 6 * PRICE
    assert amount(data["totals"]["creditsRefunded"]) == 4 * PRICE
