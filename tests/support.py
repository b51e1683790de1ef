"""Helpers shared by the tests: tenants, requests and waiting for jobs."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from dialscore.accounts import service as accounts
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.jobs import intake
from dialscore.jobs import repository as jobs_repository
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.deps import AppState
from dialscore.models import (
    ContactIntake,
    CreditLedgerEntry,
    Job,
    OutboxMessage,
    Plan,
    WebhookDelivery,
)
from dialscore.webhooks import claims

V2 = "/api/public/v2"

# The phone statuses of the interface spec, written out here independently of the code.
PHONE_STATUSES = (
    "p1", "p1 - h", "p1 - ivr", "p1 - dnc", "p1 - sf",
    "p2", "p2 - h", "p2 - ivr", "p2 - sf",
    "p3", "p3 - h", "p3 - ivr", "p3 - sf",
    "na", "na - h", "na - ivr", "na - auth", "na - dnc",
)  # fmt: skip


def amount(value: Any) -> Decimal:
    """A JSON credit amount as an exact decimal."""
    return Decimal(str(value))


@dataclass
class Tenant:
    client_id: str
    user_id: str
    api_key: str
    key_id: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


@asynccontextmanager
async def plan_tiers(db: Database, plan: str, tiers: dict[str, int | None]) -> AsyncIterator[None]:
    """Sets a plan's rate tiers for a while, then puts the old ones back."""
    async with db.unit_of_work() as session:
        row = await session.get(Plan, plan)
        assert row is not None
        saved = {name: getattr(row, name) for name in tiers}
        for name, value in tiers.items():
            setattr(row, name, value)
    try:
        yield
    finally:
        async with db.unit_of_work() as session:
            row = await session.get(Plan, plan)
            assert row is not None
            for name, value in saved.items():
                setattr(row, name, value)


def state_of(app: FastAPI) -> AppState:
    state: AppState = app.state.dialscore
    return state


# Request rate tiers that tests not about rate limits never reach.
ROOMY_TIERS: dict[str, int | None] = {
    "per_second": 1_000_000,
    "per_minute": 10_000_000,
    "per_day": 100_000_000,
}


async def make_tenant(
    db: Database,
    secret: str,
    *,
    plan: str = "team",
    credits: Decimal | int = 1000,
    name: str = "Acme",
    tiers: dict[str, int | None] | None = ROOMY_TIERS,
) -> Tenant:
    """A client with one admin user and a key; ``tiers=None`` keeps the plan's rate tiers."""
    async with db.unit_of_work() as session:
        # A unique address: one service holds the tenants of many tests.
        email = f"admin-{uuid.uuid4().hex[:12]}@{re.sub(r'[^a-z0-9]', '', name.lower())}.example"
        client, user = await accounts.create_client(
            session, name=name, plan=plan, credits=Decimal(credits), admin_email=email
        )
        if tiers:
            await accounts.set_overrides(session, client_id=client.id, values=tiers)
        key = await accounts.create_key(session, user_id=user.id, secret=secret)
    return Tenant(client.id, user.id, key.api_key, key.key_id)


async def add_user(db: Database, secret: str, tenant: Tenant, email: str) -> Tenant:
    async with db.unit_of_work() as session:
        user = await accounts.create_user(
            session, client_id=tenant.client_id, email=email, role="member"
        )
        key = await accounts.create_key(session, user_id=user.id, secret=secret)
    return Tenant(tenant.client_id, user.id, key.api_key, key.key_id)


# A phone entry's call verdict (P177): worked out as of each read, so two reads of one entry
# differ in it (``nextCallableAt`` is the read's instant while the number is callable).
AS_OF_THE_READ = frozenset(
    {"timeZone", "callWindow", "callableNow", "nextCallableAt", "bestCallHours"}
)


def without_verdict(entry: dict[str, Any]) -> dict[str, Any]:
    """A phone entry without the fields that are as of its read."""
    return {k: v for k, v in entry.items() if k not in AS_OF_THE_READ}


def contact(
    first: str = "Ann", last: str = "Lee", phone: str = "+14155552671", **extra: Any
) -> dict[str, Any]:
    return {"firstName": first, "lastName": last, "phone": phone, **extra}


def many_contacts(count: int, start: int = 0) -> list[dict[str, Any]]:
    """Distinct valid contacts with one valid US number each."""
    return [
        contact(f"First{i}", f"Last{i}", f"+1415555{(start + i) % 10_000:04d}")
        for i in range(count)
    ]


async def settle(app: FastAPI, *, rounds: int = 200, timeout: float = 60.0) -> None:
    """Runs the in-process relay and worker until the outbox is empty, then waits until no
    webhook delivery is due or in flight (deliveries due later are left alone). Bounded."""
    state = state_of(app)
    background = state.extras["worker"]
    for _ in range(rounds):
        await background.relay.drain()
        await asyncio.to_thread(background.join)
        async with state.db.read() as session:
            left = await session.scalar(select(func.count()).select_from(OutboxMessage))
        if not left:
            break
    else:
        raise AssertionError("outbox did not empty")
    dispatcher = background.dispatcher
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        async with state.db.read() as session:
            due = await session.scalar(
                select(func.count()).select_from(WebhookDelivery).where(claims.due(utcnow()))
            )
        if not due and dispatcher.busy == 0:
            return
        dispatcher.wake()
        await asyncio.sleep(0.02)
    raise AssertionError("webhook deliveries did not settle")


async def job_status(db: Database, job_id: str) -> str:
    async with db.read() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        return job.status


async def write_kept_contacts(db: Database) -> None:
    """Writes as rows the contacts that jobs still keep as submitted (P218), as their worker
    or a read of them would: for a test that reads the contacts table itself."""
    async with db.unit_of_work() as session:
        for job_id in set(await session.scalars(select(ContactIntake.job_id))):
            job = await session.get(Job, job_id)
            if job is not None and await jobs_repository.lock_job(session, job_id):
                await intake.write_rows(session, job)


async def ledger_sum(db: Database, client_id: str) -> Decimal:
    async with db.read() as session:
        rows = await session.scalars(
            select(CreditLedgerEntry.delta).where(CreditLedgerEntry.client_id == client_id)
        )
        return sum(rows.all(), Decimal(0))


async def submit(
    api: httpx.AsyncClient, tenant: Tenant, contacts: list[Any], *, kind: str = "score", **body: Any
) -> httpx.Response:
    return await api.post(
        f"{V2}/contacts/{kind}", json={"contacts": contacts, **body}, headers=tenant.headers
    )


@asynccontextmanager
async def without_worker(
    settings: Settings,
) -> AsyncIterator[tuple[Database, httpx.AsyncClient, Tenant]]:
    """The database, the API and a tenant of an app that runs no worker: nothing it is sent
    is processed."""
    app = create_app(settings, run_worker=False)
    async with app.router.lifespan_context(app):
        db = state_of(app).db
        tenant = await make_tenant(db, settings.resolved_secret_key)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            yield db, api, tenant


async def start_message(db: Database, job_id: str) -> int:
    """The id of the outbox message that starts the job's processing."""
    async with db.read() as session:
        messages = (await session.scalars(select(OutboxMessage))).all()
    (message,) = [m for m in messages if m.payload.get("job_id") == job_id]
    return message.id


async def job_contacts(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> list[dict[str, Any]]:
    """The first page of the job's contacts, as the API answers them."""
    response = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert response.status_code == 200, response.text
    contacts: list[dict[str, Any]] = response.json()["data"]["contacts"]
    return contacts


async def unprocessed_job(
    settings: Settings, people: list[dict[str, Any]], *, kind: str = "score"
) -> tuple[str, int]:
    """(job id, the outbox message that starts it) of a job of ``people`` submitted to an app
    without a worker, so that nothing processes it."""
    async with without_worker(settings) as (db, api, tenant):
        response = await submit(api, tenant, people, kind=kind)
        assert response.status_code == 200, response.text
        job_id: str = response.json()["data"]["jobId"]
        return job_id, await start_message(db, job_id)


def assert_error(response: httpx.Response, status: int) -> str:
    """Asserts the status and the {error: string} body; returns the message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    assert isinstance(body["error"], str)
    assert body["error"].strip()
    message: str = body["error"]
    return message
