"""Paying only for numbers found (P202): a finished enrichment job gives back the charge of each
contact for which no new number was found, once, in the transaction that finalizes it, and
takes it off what the charging key spent this month; a plan (or a client) may turn it off."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, timedelta
from decimal import Decimal

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from dialscore.accounts import service as accounts
from dialscore.accounts.refunds import refund_amount
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.dashboard.words import words
from dialscore.enrichment.waterfall import Enrichment, EnrichmentRequest, FoundPhone
from dialscore.jobs import processing
from dialscore.jobs.service import PROCESS_JOB
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import ApiKey, Client, CreditLedgerEntry, Job, OutboxMessage, Plan
from dialscore.outbox import messages as outbox
from tests.conftest import SECRET
from tests.support import V2, Tenant, amount, ledger_sum, make_tenant, settle, submit
from tests.web_forms import sign_in_user

SETTINGS = processing.ProcessingSettings(batch_size=2, job_lease=timedelta(seconds=30))
# A price with four decimals, so that an amount worked out with floats would show.
PRICE = Decimal("0.0333")


class EvenDigits:
    """Finds a new number for every contact whose last name ends in an even digit."""

    name = "even-digits"

    async def find(self, request: EnrichmentRequest) -> Enrichment | None:
        (found,) = await self.find_many([request])
        return found

    async def find_many(self, requests: Sequence[EnrichmentRequest]) -> list[Enrichment | None]:
        found: list[Enrichment | None] = []
        for request in requests:
            digit = int(str(request.fields["lastName"])[-1])
            phone = FoundPhone(f"+1212555718{digit}", "mobile")
            found.append(
                Enrichment((phone,), f"rec-{digit}", self.name) if digit % 2 == 0 else None
            )
        return found


@dataclass
class Service:
    """The service without a worker: the test runs the job's processing itself."""

    db: Database
    api: httpx.AsyncClient
    tenant: Tenant


@pytest.fixture
async def service(settings: Settings) -> AsyncIterator[Service]:
    app = create_app(settings, run_worker=False)
    async with app.router.lifespan_context(app):
        db: Database = app.state.dialscore.db
        tenant = await make_tenant(db, SECRET)
        async with db.unit_of_work() as session:
            client = await session.get(Client, tenant.client_id)
            assert client is not None
            client.overrides = {**client.overrides, "cost_per_contact": str(PRICE)}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            yield Service(db, api, tenant)


async def enrich(service: Service, count: int) -> tuple[str, int]:
    """(job id, its outbox message) of an enrichment job of ``count`` contacts, Lee0 …,
    charged and waiting for a worker."""
    people = [
        {"firstName": "Ann", "lastName": f"Lee{i}", "companyAccount": "Acme"} for i in range(count)
    ]
    response = await submit(service.api, service.tenant, people, kind="enrich")
    assert response.status_code == 200, response.text
    assert amount(response.json()["credits"]["creditsCharged"]) == PRICE * count
    job_id: str = response.json()["data"]["jobId"]
    async with service.db.read() as session:
        message = await session.scalar(
            select(OutboxMessage).where(OutboxMessage.actor == PROCESS_JOB)
        )
    assert message is not None
    return job_id, message.id


async def run(service: Service, job_id: str, outbox_id: int) -> str | None:
    return await processing.process_job(
        service.db, job_id=job_id, outbox_id=outbox_id, settings=SETTINGS, sources=[EvenDigits()]
    )


async def ledger(db: Database, job_id: str) -> list[tuple[Decimal, str, str | None, str | None]]:
    """The job's ledger rows in order: (delta, reason, user, key)."""
    async with db.read() as session:
        rows = await session.scalars(
            select(CreditLedgerEntry)
            .where(CreditLedgerEntry.job_id == job_id)
            .order_by(CreditLedgerEntry.id)
        )
        return [(r.delta, r.reason, r.user_id, r.key_id) for r in rows]


async def key_spending(db: Database, key_id: str) -> tuple[str | None, Decimal]:
    async with db.read() as session:
        key = await session.get(ApiKey, key_id)
        assert key is not None
        return key.spent_month, key.spent_this_month


async def read_job(service: Service, job_id: str) -> dict[str, object]:
    answer = await service.api.get(f"{V2}/jobs/{job_id}", headers=service.tenant.headers)
    assert answer.status_code == 200, answer.text
    data: dict[str, object] = answer.json()["data"]
    return data


async def balance(service: Service) -> Decimal:
    answer = await service.api.get(f"{V2}/account/credits", headers=service.tenant.headers)
    return amount(answer.json()["data"]["credits"])


def this_month() -> str:
    return utcnow().astimezone(UTC).strftime("%Y-%m")


async def test_only_the_contacts_with_no_new_number_are_refunded_once(service: Service) -> None:
    job_id, outbox_id = await enrich(service, 5)
    charged = PRICE * 5
    assert await key_spending(service.db, service.tenant.key_id) == (this_month(), charged)

    assert await run(service, job_id, outbox_id) == "Finalized"

    # Lee1 and Lee3 got no new number: two contacts at the price they were charged, exactly.
    refunded = PRICE * 2
    tenant = service.tenant
    assert await ledger(service.db, job_id) == [
        (-charged, "enrichment submission", tenant.user_id, tenant.key_id),
        (refunded, "enrichment refund", tenant.user_id, tenant.key_id),
    ]
    assert refunded == Decimal("0.0666")
    assert await balance(service) == 1000 - charged + refunded == Decimal("999.9001")
    assert await ledger_sum(service.db, tenant.client_id) == 1000 - charged + refunded
    job = await read_job(service, job_id)
    assert (job["status"], job["creditsRefunded"]) == ("Finalized", 0.0666)
    # The refunded contacts do not count against the key's monthly limit.
    assert await key_spending(service.db, tenant.key_id) == (this_month(), charged - refunded)

    # The message delivered again, as after a crash before it was acknowledged: the job is
    # finished, nothing more is refunded.
    assert await run(service, job_id, outbox_id) is None
    async with service.db.unit_of_work() as session:
        again = outbox.enqueue(session, PROCESS_JOB, {"job_id": job_id})
        await session.flush()
        again_id = again.id
    assert await run(service, job_id, again_id) is None
    assert len(await ledger(service.db, job_id)) == 2
    assert await balance(service) == Decimal("999.9001")
    assert (await read_job(service, job_id))["creditsRefunded"] == 0.0666
    assert await key_spending(service.db, tenant.key_id) == (this_month(), charged - refunded)


async def test_a_finish_that_fails_refunds_nothing_and_the_next_run_refunds_once(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refund is written with the job's terminal state: when that transaction fails after
    the refund was made (here: writing job.completed), neither is kept."""
    job_id, outbox_id = await enrich(service, 3)

    async def failing_emit(*args: object, **kwargs: object) -> int:
        raise RuntimeError("the database went away")

    with monkeypatch.context() as patched:
        patched.setattr(processing.webhooks, "emit", failing_emit)
        with pytest.raises(RuntimeError, match="went away"):
            await run(service, job_id, outbox_id)
    async with service.db.read() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        assert (job.status, job.credits_refunded) == ("Processing", 0)
    assert len(await ledger(service.db, job_id)) == 1

    assert await run(service, job_id, outbox_id) == "Finalized"
    assert [reason for _, reason, _, _ in await ledger(service.db, job_id)] == [
        "enrichment submission",
        "enrichment refund",
    ]
    assert (await read_job(service, job_id))["creditsRefunded"] == float(PRICE)  # Lee1


async def test_a_job_that_found_nothing_refunds_all_and_the_key_never_goes_below_zero(
    service: Service,
) -> None:
    # Lee1, Lee3, Lee5: nothing found for any.
    people = [
        {"firstName": "Ann", "lastName": f"Lee{i}", "companyAccount": "Acme"} for i in (1, 3, 5)
    ]
    response = await submit(service.api, service.tenant, people, kind="enrich")
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    async with service.db.unit_of_work() as session:
        message = await session.scalar(select(OutboxMessage))
        assert message is not None
        outbox_id = message.id
        # Less than the refund counted this month (an operator set the count back, say).
        await session.execute(
            update(ApiKey)
            .where(ApiKey.id == service.tenant.key_id)
            .values(spent_this_month=Decimal("0.01"))
        )

    assert await run(service, job_id, outbox_id) == "Not Enriched"
    assert (await read_job(service, job_id))["creditsRefunded"] == float(PRICE * 3)
    assert await balance(service) == 1000
    assert await key_spending(service.db, service.tenant.key_id) == (this_month(), 0)


async def test_a_charge_of_an_earlier_month_is_refunded_but_not_taken_off_this_month(
    service: Service,
) -> None:
    job_id, outbox_id = await enrich(service, 2)
    async with service.db.unit_of_work() as session:
        # The job was charged 40 days ago; the key has spent 7 credits this month since.
        await session.execute(
            update(CreditLedgerEntry)
            .where(CreditLedgerEntry.job_id == job_id)
            .values(created_at=utcnow() - timedelta(days=40))
        )
        await session.execute(
            update(ApiKey)
            .where(ApiKey.id == service.tenant.key_id)
            .values(spent_month=this_month(), spent_this_month=Decimal(7))
        )

    assert await run(service, job_id, outbox_id) == "Finalized"
    assert [delta for delta, *_ in await ledger(service.db, job_id)] == [-PRICE * 2, PRICE]
    assert await key_spending(service.db, service.tenant.key_id) == (this_month(), 7)


@asynccontextmanager
async def plan_refunds(db: Database, plan: str, refund: bool) -> AsyncIterator[None]:
    """Sets whether a plan refunds for a while (the plans are shared by the tests)."""
    async with db.unit_of_work() as session:
        await session.execute(update(Plan).where(Plan.name == plan).values(refund_unfound=refund))
    try:
        yield
    finally:
        async with db.unit_of_work() as session:
            await session.execute(update(Plan).where(Plan.name == plan).values(refund_unfound=True))


@pytest.mark.parametrize(
    ("plan_refunds_them", "client_override", "refunded"),
    [
        (False, None, Decimal(0)),
        (True, False, Decimal(0)),
        (False, True, PRICE * 2),
    ],
    ids=["plan-off", "client-off", "client-on"],
)
async def test_a_plan_or_a_client_override_decides_whether_to_refund(
    service: Service, plan_refunds_them: bool, client_override: bool | None, refunded: Decimal
) -> None:
    if client_override is not None:
        async with service.db.unit_of_work() as session:
            plan = await accounts.set_overrides(
                session,
                client_id=service.tenant.client_id,
                values={"refund_unfound": client_override},
            )
        assert plan.refund_unfound is client_override
    job_id, outbox_id = await enrich(service, 4)
    async with plan_refunds(service.db, "team", plan_refunds_them):
        assert await run(service, job_id, outbox_id) == "Finalized"
    rows = await ledger(service.db, job_id)
    assert [delta for delta, *_ in rows] == [-PRICE * 4] + ([refunded] if refunded else [])
    assert amount((await read_job(service, job_id))["creditsRefunded"]) == refunded
    assert await balance(service) == 1000 - PRICE * 4 + refunded


async def test_a_scoring_job_refunds_nothing(service: Service) -> None:
    response = await submit(service.api, service.tenant, [{"firstName": "Ann", "lastName": "Lee",
                                                           "phone": "+14155552671"}])  # fmt: skip
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    async with service.db.read() as session:
        message = await session.scalar(select(OutboxMessage))
    assert message is not None
    assert await run(service, job_id, message.id) == "Finalized"
    assert len(await ledger(service.db, job_id)) == 1
    assert (await read_job(service, job_id))["creditsRefunded"] == 0


async def test_an_override_of_refunds_must_be_true_or_false(service: Service) -> None:
    async with service.db.unit_of_work() as session:
        with pytest.raises(Exception, match="refund_unfound must be true or false"):
            await accounts.set_overrides(
                session, client_id=service.tenant.client_id, values={"refund_unfound": 1}
            )


def test_the_amount_is_the_price_charged_times_the_contacts_exactly() -> None:
    assert refund_amount(Decimal("0.1665"), 2, 5) == Decimal("0.0666")
    assert refund_amount(Decimal(1000), 1000, 1000) == 1000
    assert refund_amount(Decimal(3), 0, 3) == 0
    # Never more than was charged, and never more than a charge's even share.
    assert refund_amount(Decimal(3), 5, 3) == 3
    assert refund_amount(Decimal(1), 1, 3) == Decimal("0.3333")


# -- the web app (with the worker) ---------------------------------------------------------------


async def test_the_account_and_job_pages_say_it_in_words(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    refunds = words().refunds
    people = [{"firstName": "Bo", "lastName": "Nobody", "companyAccount": "Nowhere Ltd"}]
    response = await submit(api, tenant, people, kind="enrich")
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)

    await sign_in_user(api, db, tenant.user_id)
    page = await api.get("/app/account")
    assert f"<dd data-refunds>{refunds['on']}</dd>" in page.text
    assert "refund_unfound" not in page.text and "refundUnfound" not in page.text
    shown = await api.get(f"/app/jobs/{job_id}")
    assert f"<dt>{refunds['job_label']}</dt><dd data-refunded>1 <small" in shown.text
    assert "enrichment refund" in (await api.get("/app/account")).text

    async with db.unit_of_work() as session:
        await accounts.set_overrides(
            session, client_id=tenant.client_id, values={"refund_unfound": False}
        )
    page = await api.get("/app/account")
    assert f"<dd data-refunds>{refunds['off']}</dd>" in page.text
