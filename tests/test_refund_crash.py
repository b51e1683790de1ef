"""Refunds exactly once after a worker killed mid-job (issue 32, P202), with real processes.

An enrichment job of several batches, People Data Labs (a local fake on 127.0.0.1) finding a
number for two contacts in three. The fake holds every request about the contacts after the
second batch, so the worker is surely in the middle of the job when it is killed (SIGKILL):
two batches saved, the third waiting for its answers. A new process takes the job over once
its lease has run out and finishes it. The finished job has refunded, in one ledger row, the
price of each contact nobody found a number for; its message delivered again adds nothing.

On the embedded SQLite default ``dialscore serve`` runs the worker and is killed itself; on
PostgreSQL (and Redis) an API process stays up and the ``dialscore worker`` is killed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from sqlalchemy import func, select

from dialscore.enrichment.waterfall import NO_DATA_FOUND
from dialscore.jobs.service import PROCESS_JOB
from dialscore.kit.db import Database
from dialscore.models import Client, CreditLedgerEntry, OutboxMessage
from dialscore.outbox import messages as outbox
from tests.fakes import Received
from tests.processes import (
    DATABASES,
    REDIS_URL,
    V2,
    Processes,
    Service,
    api_client,
    base_env,
    cli_json,
    fresh_postgres_database,
    get_job,
    job_contacts,
    processes,
    redis_namespace,
    wait_for,
    wait_for_job,
)
from tests.support import amount
from tests.test_enrichment_providers import PDL_KEY, FakePDL, PdlPerson, pdl_record

pytestmark = pytest.mark.slow

T = TypeVar("T")

SECRET = "refund-crash-test-secret-key-that-is-long-enough-for-hs256"
CREDITS = Decimal(1000)
# A price per contact with four decimals, so that an amount worked out with floats would show.
PRICE = Decimal("0.0333")
CONTACTS = 24
BATCH = 4
# Requests about the contacts from this one on (the third batch) wait until the gate opens.
HELD_FROM = 2 * BATCH
# Answers about held contacts wait at most this long (the test fails long before).
HOLD_LIMIT = 120.0
REFUND_REASON = "enrichment refund"
SETTINGS = {
    "RELAY_POLL_SECONDS": "0.1",
    "WORKER_POLL_MS": "100",
    "WORKER_THREADS": "2",
    "JOB_BATCH_SIZE": str(BATCH),
    # A killed worker's job is taken over 2 s after its last renewal, its message 3 s after.
    "JOB_LEASE_SECONDS": "2",
    "OUTBOX_LEASE_SECONDS": "3",
    "ENRICHMENT_SOURCES": "pdl",
    "PDL_API_KEY": PDL_KEY,
    "PDL_RATE_PER_SECOND": "1000",
    # Longer than a held request waits: none times out (and is asked again, or given up).
    "PDL_TIMEOUT": str(HOLD_LIMIT + 10),
}
# The longest any step may take (on a loaded machine; a run takes seconds).
WAIT = 60.0


def email(index: int) -> str:
    return f"refund{index}@acme.com"


def found(index: int) -> bool:
    """PDL knows two contacts in three: not refund0, refund3, refund6 …"""
    return index % 3 != 0


def people() -> list[dict[str, Any]]:
    return [
        {
            "firstName": "Rae",
            "lastName": f"Fund{index}",
            "email": email(index),
            "companyAccount": "Acme",
        }
        for index in range(CONTACTS)
    ]


def index_of(request: Received) -> int | None:
    """The contact a request to PDL is about (by its email); None for anything else."""
    address = request.query.get("email", [""])[0]
    if not (address.startswith("refund") and address.endswith("@acme.com")):
        return None
    return int(address.removeprefix("refund").removesuffix("@acme.com"))


class GatedPDL(FakePDL):
    """PDL, holding each request about a contact from ``HELD_FROM`` on until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__(
            [
                PdlPerson(
                    pdl_record(
                        f"pdl_refund_{index:04d}",
                        "Rae",
                        f"Fund{index}",
                        email(index),
                        numbers=[f"+1212555{index:04d}"],
                    ),
                    8,
                )
                for index in range(CONTACTS)
                if found(index)
            ]
        )
        self.gate = threading.Event()

    def held(self, request: Received) -> bool:
        index = index_of(request)
        return index is not None and index >= HELD_FROM

    def held_requests(self) -> int:
        with self._state:
            return sum(1 for request in self.received if self.held(request))

    def respond(self, request: Received, index: int) -> Any:
        if self.held(request):
            self.gate.wait(HOLD_LIMIT)
        return super().respond(request, index)

    def stop(self) -> None:
        self.gate.set()
        super().stop()


@dataclass
class Deployment:
    """The processes of one database: ``api`` answers the API; ``worker`` runs jobs (on
    SQLite both are one ``serve``); ``restart`` starts a new worker (and API, when it is the
    same process) after a kill."""

    database_url: str
    procs: Processes
    env: dict[str, str]
    api: Service
    worker: Service
    restart: Callable[[Deployment], None]

    @property
    def services(self) -> list[Service]:
        return [self.api, self.worker] if self.api is not self.worker else [self.api]


def restart_serve(deployment: Deployment) -> None:
    server = deployment.procs.serve(env=deployment.env, worker=True)
    deployment.api = deployment.worker = server


def restart_worker(deployment: Deployment) -> None:
    deployment.worker = deployment.procs.start("worker", ["worker"], env=deployment.env)


def create_client(env: dict[str, str], cwd: Path, url: str) -> str:
    """A client on a plan with high rate limits (polling is frequent), enriching at ``PRICE``
    a contact; its API key."""
    created = cli_json(
        [
            *("admin", "create-client", "--name", "Refund"),
            *("--plan", "enterprise", "--credits", str(CREDITS)),
        ],
        env=env,
        cwd=cwd,
    )
    api_key: str = created["apiKey"]

    async def set_price(db: Database) -> None:
        async with db.unit_of_work() as session:
            client = await session.get(Client, created["clientId"])
            assert client is not None
            client.overrides = {**client.overrides, "cost_per_contact": str(PRICE)}

    with_db(url, set_price)
    return api_key


@pytest.fixture(params=DATABASES)
def deployment(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Deployment, GatedPDL, str]]:
    """The processes of the database, configured for the fake PDL, and a client's API key.

    They are stopped before the database is dropped, and PDL goes last."""
    with ExitStack() as stack:
        pdl = stack.enter_context(GatedPDL())
        data_dir = tmp_path / "var"
        settings = {**SETTINGS, "PDL_BASE_URL": pdl.base_url}
        if request.param == "sqlite":
            # The embedded default: SQLite under the data dir, the in-memory broker.
            env = base_env(data_dir, **settings)
            url = f"sqlite:///{data_dir / 'dialscore.db'}"
            api_key = create_client(env, tmp_path, url)
            procs = stack.enter_context(processes(tmp_path / "logs"))
            server = procs.serve(env=env, worker=True)
            yield Deployment(url, procs, env, server, server, restart_serve), pdl, api_key
            return
        url = stack.enter_context(fresh_postgres_database())
        namespace = stack.enter_context(redis_namespace())
        env = base_env(
            data_dir,
            DATABASE_URL=url,
            REDIS_URL=REDIS_URL,
            REDIS_NAMESPACE=namespace,
            SECRET_KEY=SECRET,
            **settings,
        )
        assert cli_json(["migrate"], env=env, cwd=tmp_path) == {"migrated": True}
        api_key = create_client(env, tmp_path, url)
        procs = stack.enter_context(processes(tmp_path / "logs"))
        api = procs.serve(env=env, worker=False)
        worker = procs.start("worker", ["worker"], env=env)
        yield Deployment(url, procs, env, api, worker, restart_worker), pdl, api_key


# -- the database, read (and written once) from this process ------------------------------------


def with_db(url: str, action: Callable[[Database], Awaitable[T]]) -> T:
    async def run() -> T:
        db = Database(url)
        try:
            return await action(db)
        finally:
            await db.dispose()

    return asyncio.run(run())


def ledger_of(url: str, job_id: str) -> list[tuple[str, Decimal]]:
    """The job's ledger rows in order: (reason, delta)."""

    async def read(db: Database) -> list[tuple[str, Decimal]]:
        async with db.read() as session:
            rows = await session.execute(
                select(CreditLedgerEntry.reason, CreditLedgerEntry.delta)
                .where(CreditLedgerEntry.job_id == job_id)
                .order_by(CreditLedgerEntry.id)
            )
            return [(reason, delta) for reason, delta in rows]

    return with_db(url, read)


def books(url: str) -> tuple[Decimal, Decimal]:
    """(the one client's balance, the sum of its ledger)."""

    async def read(db: Database) -> tuple[Decimal, Decimal]:
        async with db.read() as session:
            (balance,) = (await session.scalars(select(Client.credits))).all()
            total = await session.scalar(select(func.sum(CreditLedgerEntry.delta)))
            assert total is not None
            return balance, Decimal(total)

    return with_db(url, read)


def deliver_again(url: str, job_id: str) -> int:
    """The job's message written again, as a redelivery after a crash would bring it; its id."""

    async def write(db: Database) -> int:
        async with db.unit_of_work() as session:
            message = outbox.enqueue(session, PROCESS_JOB, {"job_id": job_id})
            await session.flush()
            return message.id

    return with_db(url, write)


def message_left(url: str, outbox_id: int) -> bool:
    async def read(db: Database) -> bool:
        async with db.read() as session:
            return await session.get(OutboxMessage, outbox_id) is not None

    return with_db(url, read)


# -- the API ---------------------------------------------------------------------------------------


def balance_of(client: httpx.Client) -> Decimal:
    response = client.get(f"{V2}/account/credits")
    assert response.status_code == 200, response.text
    return amount(response.json()["data"]["credits"])


def finished(job: dict[str, Any]) -> bool:
    return job["status"] in ("Finalized", "Not Enriched", "Failed")


def test_a_worker_killed_mid_job_refunds_the_unfound_contacts_exactly_once(
    deployment: tuple[Deployment, GatedPDL, str],
) -> None:
    run, pdl, api_key = deployment
    unfound = [index for index in range(CONTACTS) if not found(index)]
    assert 0 < len(unfound) < CONTACTS and any(index < HELD_FROM for index in unfound)

    with api_client(run.api, api_key) as client:
        assert balance_of(client) == CREDITS
        response = client.post(f"{V2}/contacts/enrich", json={"contacts": people()})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["data"]["acceptedRecordCount"] == CONTACTS, body
        job_id: str = body["data"]["jobId"]
        charge = amount(body["credits"]["creditsCharged"])
        assert amount(body["credits"]["costPerContact"]) == PRICE
        assert charge == PRICE * CONTACTS == Decimal("0.7992")

        # The kill: two batches saved, and the worker waiting for PDL's answers about the
        # third (held), so that neither the job nor a third batch can have been finished.
        def mid_job() -> dict[str, Any] | None:
            job = get_job(client, job_id)
            if job is None or job["processedCount"] < HELD_FROM or not pdl.held_requests():
                return None
            return job

        at_kill = wait_for(
            mid_job,
            timeout=WAIT,
            interval=0.02,
            what="two batches saved and the third waiting for PDL",
            services=run.services,
        )
        run.worker.kill()
    assert (at_kill["status"], at_kill["processedCount"]) == ("Processing", HELD_FROM), at_kill
    killed = run.worker
    pdl.gate.set()  # from now on PDL answers at once, the killed worker's requests included

    run.restart(run)
    with api_client(run.api, api_key) as client:
        job = wait_for_job(
            client,
            job_id,
            finished,
            timeout=WAIT,
            what="the job to be finished by the process that took it over",
            services=run.services,
        )
        assert job["status"] == "Finalized", job
        assert job["processedCount"] == job["acceptedRecordCount"] == CONTACTS
        # The new worker took the job over once the killed one's lease had run out.
        assert "job taken over" in run.worker.log_tail(200_000), run.worker.log_tail()
        assert "job taken over" not in killed.log_tail(200_000)

        # Exactly the contacts PDL does not know were rejected; the others scored.
        contacts = {c["email"]: c for c in job_contacts(client, job_id)}
        assert len(contacts) == CONTACTS
        rejected = sorted(
            index
            for index in range(CONTACTS)
            if contacts[email(index)]["rejectedReason"] == NO_DATA_FOUND
        )
        assert rejected == unfound
        assert all(
            contacts[email(index)]["phones"] and contacts[email(index)]["rejectedReason"] is None
            for index in range(CONTACTS)
            if found(index)
        )

        # One refund row: the price of each contact not found, in the job's and the client's
        # books alike.
        refund = PRICE * len(unfound)
        assert refund == Decimal("0.2664")
        assert ledger_of(run.database_url, job_id) == [
            ("enrichment submission", -charge),
            (REFUND_REASON, refund),
        ]
        assert amount(job["creditsRefunded"]) == refund
        assert balance_of(client) == CREDITS - charge + refund
        assert books(run.database_url) == (CREDITS - charge + refund,) * 2

        # The job's message delivered again, to the running worker: it finds the job
        # finished, finishes the message and refunds nothing more.
        again = deliver_again(run.database_url, job_id)
        wait_for(
            lambda: None if message_left(run.database_url, again) else True,
            timeout=WAIT,
            interval=0.1,
            what="the message delivered again to be finished",
            services=run.services,
        )
        assert ledger_of(run.database_url, job_id) == [
            ("enrichment submission", -charge),
            (REFUND_REASON, refund),
        ]
        shown = get_job(client, job_id)
        assert shown is not None
        assert (shown["status"], amount(shown["creditsRefunded"])) == ("Finalized", refund)
        assert balance_of(client) == CREDITS - charge + refund
        assert books(run.database_url) == (CREDITS - charge + refund,) * 2
