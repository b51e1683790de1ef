"""The record of Reassigned Numbers Database queries (P195) on both databases: a scoring job
writes one row per (contact, number, consent date) it asked about, with the answers of the
fake RND of tests/test_reassigned_numbers.py and ``none`` for what went unanswered;
``GET /account/reassigned-queries`` lists the caller's client's record (the operator's
command: tests/test_rnd_record_cli.py).

The jobs' queries go to the fake on 127.0.0.1 with the pacing on a fake clock, so retries and
backoff are recorded rather than waited for; the endpoint's clock is set where it reads it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from dialscore.accuracy import rnd_endpoints
from dialscore.accuracy.service import SINCE_MALFORMED
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.jobs import processing as jobs_processing
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import Contact, OutboxMessage, RndQuery
from dialscore.scoring import rnd_record
from dialscore.scoring.evidence import ReassignedCheck
from tests.conftest import SECRET
from tests.fakes import Answer
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
from tests.test_api_document import document
from tests.test_providers import FakeClock
from tests.test_reassigned_numbers import (
    CONSENT,
    DOCUMENTED,
    KEPT,
    LONDON,
    NO_DATA,
    REASSIGNED,
    UNASKED,
    FakeRND,
    configured,
    rnd,
    rnd_settings,
)
from tests.test_scoring_report import stamp

QUERIES = f"{V2}/account/reassigned-queries"
LATER = date(2025, 9, 1)
# Two contacts a batch: Ann and Bob in the first, Cy and Di in the second, Ed and Flo in the
# third; Flo asks about Ann's reassigned number since a later date (the fake: "No").
SETTINGS = jobs_processing.ProcessingSettings(batch_size=2, job_lease=timedelta(seconds=30))


@pytest.fixture
def fake() -> Iterator[FakeRND]:
    with FakeRND(dict(DOCUMENTED)) as server:
        yield server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def records() -> list[dict[str, Any]]:
    day = CONSENT.isoformat()
    return [
        contact("Ann", "Lee", REASSIGNED, phone2=KEPT, consentDate=day),
        contact("Bob", "Roe", NO_DATA, phone2=REASSIGNED, unmappedFields={"consentDate": day}),
        contact("Cy", "Poe", UNASKED),  # no consent date: not asked
        contact("Di", "Fox", UNASKED, consentDate="last spring"),  # no date: not asked
        contact("Ed", "Ray", LONDON, consentDate=day),  # not a US number: not asked
        contact("Flo", "Day", REASSIGNED, consentDate=LATER.isoformat()),
    ]


# -- the job writes the record -----------------------------------------------------------------


@dataclass(frozen=True)
class PendingJob:
    job_id: str
    outbox_id: int
    tenant: Tenant


async def pending_job(settings: Settings, people: list[dict[str, Any]]) -> PendingJob:
    """A scoring job of ``people`` that no worker processes, submitted through the API."""
    app = create_app(rnd_settings(settings), run_worker=False)
    async with app.router.lifespan_context(app):
        db = state_of(app).db
        tenant = await make_tenant(db, SECRET, plan="business")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            response = await submit(api, tenant, people)
        assert response.status_code == 200, response.text
        async with db.read() as session:
            message = await session.scalar(select(OutboxMessage))
        assert message is not None
        return PendingJob(response.json()["data"]["jobId"], message.id, tenant)


async def process(settings: Settings, job: PendingJob, checker: Any) -> list[tuple[Any, ...]]:
    """Processes the job with ``checker`` as its RND; the rows it recorded, as (first name,
    number, consent date, answer), after checking what each row says of its job and time."""
    db = Database(settings.resolved_database_url)
    try:
        before = utcnow()
        status = await jobs_processing.process_job(
            db, job_id=job.job_id, outbox_id=job.outbox_id, settings=SETTINGS, reassigned=checker
        )
        after = utcnow()
        assert status == "Finalized"
        async with db.read() as session:
            names = {
                c.id: c.fields["firstName"]
                for c in await session.scalars(select(Contact).where(Contact.job_id == job.job_id))
            }
            rows = (await session.scalars(select(RndQuery).order_by(RndQuery.id))).all()
    finally:
        await db.dispose()
    for row in rows:
        assert (row.client_id, row.job_id) == (job.tenant.client_id, job.job_id)
        assert before <= row.asked_at <= after
    return [(names[r.contact_id], r.number, r.consent_date, r.answer) for r in rows]


async def test_a_job_records_each_query_with_its_answer(
    settings: Settings, fake: FakeRND, clock: FakeClock
) -> None:
    job = await pending_job(settings, records())
    async with rnd(fake, clock) as checker:
        recorded = await process(settings, job, checker)
    # One row per contact, number and consent date: Ann's and Bob's shared number asked once
    # (one request) but recorded for each; Flo's with her own date, in the third batch.
    assert sorted(recorded) == sorted(
        [
            ("Ann", REASSIGNED, CONSENT, "yes"),
            ("Ann", KEPT, CONSENT, "no"),
            ("Bob", NO_DATA, CONSENT, "no_data"),
            ("Bob", REASSIGNED, CONSENT, "yes"),
            ("Flo", REASSIGNED, LATER, "no"),
        ]
    )
    day, later = CONSENT.isoformat(), LATER.isoformat()
    assert fake.asked() == sorted(
        [(REASSIGNED, day), (KEPT, day), (NO_DATA, day), (REASSIGNED, later)]
    )


async def test_a_query_given_up_is_recorded_as_none(
    settings: Settings, fake: FakeRND, clock: FakeClock
) -> None:
    # Ann's and Bob's number since the consent date: unavailable on each of its 3 tries.
    fake.script(REASSIGNED, Answer(503), Answer(503), Answer(503))
    job = await pending_job(settings, records())
    async with rnd(fake, clock) as checker:
        recorded = await process(settings, job, checker)
    assert sorted(recorded) == sorted(
        [
            ("Ann", REASSIGNED, CONSENT, "none"),
            ("Ann", KEPT, CONSENT, "no"),
            ("Bob", NO_DATA, CONSENT, "no_data"),
            ("Bob", REASSIGNED, CONSENT, "none"),
            ("Flo", REASSIGNED, LATER, "no"),
        ]
    )
    assert clock.sleeps == [0.5, 1.0]


async def test_an_outage_records_every_query_as_none(
    settings: Settings, fake: FakeRND, clock: FakeClock
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    job = await pending_job(settings, records())
    async with rnd(fake, clock, base_url=f"http://127.0.0.1:{closed_port}") as checker:
        recorded = await process(settings, job, checker)
    assert sorted(recorded) == sorted(
        [
            ("Ann", REASSIGNED, CONSENT, "none"),
            ("Ann", KEPT, CONSENT, "none"),
            ("Bob", NO_DATA, CONSENT, "none"),
            ("Bob", REASSIGNED, CONSENT, "none"),
            ("Flo", REASSIGNED, LATER, "none"),
        ]
    )
    assert fake.received == []


async def test_without_the_database_nothing_is_recorded(settings: Settings) -> None:
    job = await pending_job(settings, records())
    assert await process(settings, job, None) == []


def test_the_rows_of_a_batch_come_from_its_checks() -> None:
    at = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    checks = {
        "c1": {
            REASSIGNED: ReassignedCheck("2025-03-01", "yes"),
            KEPT: ReassignedCheck("2025-03-01"),
        },
        "c2": {UNASKED: ReassignedCheck("last spring", date_valid=False)},
    }
    rows = rnd_record.query_rows(checks, client_id="k", job_id="j", asked_at=at)
    common = {"client_id": "k", "job_id": "j", "consent_date": CONSENT, "asked_at": at}
    assert rows == [
        {**common, "contact_id": "c1", "number": REASSIGNED, "answer": "yes"},
        {**common, "contact_id": "c1", "number": KEPT, "answer": "none"},
    ]


async def test_a_job_through_the_worker_is_listed_by_the_api(
    settings: Settings, fake: FakeRND
) -> None:
    app = create_app(configured(settings, fake), run_worker=True)
    async with app.router.lifespan_context(app):
        tenant = await make_tenant(state_of(app).db, SECRET, plan="business")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            response = await submit(api, tenant, records())
            assert response.status_code == 200, response.text
            job_id = response.json()["data"]["jobId"]
            await settle(app)
            contacts = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
            listed = await api.get(QUERIES, headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    names = {c["id"]: c["firstName"] for c in contacts.json()["data"]["contacts"]}
    queries = listed.json()["data"]["queries"]
    assert {q["jobId"] for q in queries} == {job_id}
    assert sorted((names[q["contactId"]], q["number"], q["answer"]) for q in queries) == sorted(
        [
            ("Ann", REASSIGNED, "yes"),
            ("Ann", KEPT, "no"),
            ("Bob", NO_DATA, "no_data"),
            ("Bob", REASSIGNED, "yes"),
            ("Flo", REASSIGNED, "no"),
        ]
    )


# -- GET /account/reassigned-queries -----------------------------------------------------------

NOW = datetime(2026, 12, 8, 12, 0, tzinfo=UTC)
OTHER_NUMBER = "+13125550147"


def row(client_id: str, number: str, days_ago: float, answer: str = "no") -> dict[str, Any]:
    return {
        "client_id": client_id,
        "job_id": "3c0f6a54-8a4e-4d8e-9a53-2f0f3f1f9b21",
        "contact_id": "8eae9198-9ae2-45c0-81f5-fef55bebecb4",
        "number": number,
        "consent_date": CONSENT,
        "asked_at": NOW - timedelta(days=days_ago),
        "answer": answer,
    }


async def insert(db: Database, rows: list[dict[str, Any]]) -> None:
    async with db.unit_of_work() as session:
        await rnd_record.insert_queries(session, rows)


@pytest.fixture
async def recorded(db: Database, tenant: Tenant, monkeypatch: pytest.MonkeyPatch) -> Tenant:
    """The tenant's record (newest first: 1, 2, 10, 30 and 100 days old) beside another
    client's; the endpoint's clock at NOW. The other client's tenant."""
    monkeypatch.setattr(rnd_endpoints, "utcnow", lambda: NOW)
    other = await make_tenant(db, SECRET, name="Other")
    await insert(
        db,
        [
            row(tenant.client_id, REASSIGNED, 10, "yes"),
            row(tenant.client_id, KEPT, 1),
            row(other.client_id, REASSIGNED, 3, "no_data"),
            row(tenant.client_id, REASSIGNED, 100),
            row(tenant.client_id, NO_DATA, 2, "no_data"),
            row(tenant.client_id, OTHER_NUMBER, 30, "none"),
        ],
    )
    return other


async def listing(api: httpx.AsyncClient, tenant: Tenant, **params: Any) -> dict[str, Any]:
    response = await api.get(QUERIES, params=params, headers=tenant.headers)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


def ages(data: dict[str, Any]) -> list[int]:
    """The age in days (at NOW) of each query listed."""
    return [(NOW - datetime.fromisoformat(q["askedAt"])).days for q in data["queries"]]


async def test_the_record_lists_the_callers_client_newest_first(
    api: httpx.AsyncClient, tenant: Tenant, recorded: Tenant
) -> None:
    data = await listing(api, tenant)
    # Since 90 days before the clock by default: the 100-day-old query is left out.
    assert ages(data) == [1, 2, 10, 30]
    assert data["queries"][0] == {
        "number": KEPT,
        "consentDate": "2025-03-01",
        "askedAt": stamp(NOW - timedelta(days=1)),
        "answer": "no",
        "jobId": "3c0f6a54-8a4e-4d8e-9a53-2f0f3f1f9b21",
        "contactId": "8eae9198-9ae2-45c0-81f5-fef55bebecb4",
    }
    assert [q["answer"] for q in data["queries"]] == ["no", "no_data", "yes", "none"]
    assert data["pagination"]["totalCount"] == 4
    # The other client sees its own query only.
    theirs = await listing(api, recorded)
    assert [(q["number"], q["answer"]) for q in theirs["queries"]] == [(REASSIGNED, "no_data")]


async def test_a_colleague_sees_the_clients_record(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, recorded: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@acme.example")
    assert ages(await listing(api, colleague)) == [1, 2, 10, 30]


async def test_since_and_number_filter_the_record(
    api: httpx.AsyncClient, tenant: Tenant, recorded: Tenant
) -> None:
    assert ages(await listing(api, tenant, since="2026-01-01")) == [1, 2, 10, 30, 100]
    assert ages(await listing(api, tenant, since=stamp(NOW - timedelta(days=10)))) == [1, 2, 10]
    assert ages(await listing(api, tenant, since=stamp(NOW))) == []
    since = "2026-01-01"
    for spelled in (REASSIGNED, REASSIGNED[2:], "(415) 555-2671", " " + REASSIGNED[1:]):
        found = await listing(api, tenant, number=spelled, since=since)
        assert ages(found) == [10, 100], spelled
        assert {q["number"] for q in found["queries"]} == {REASSIGNED}
    assert ages(await listing(api, tenant, number=REASSIGNED)) == [10]
    assert (await listing(api, tenant, number="+442079460123"))["queries"] == []


async def test_the_record_is_paginated(
    api: httpx.AsyncClient, tenant: Tenant, recorded: Tenant
) -> None:
    pages = [await listing(api, tenant, limit=3, page=n, since="2026-01-01") for n in (1, 2, 3)]
    assert [ages(p) for p in pages] == [[1, 2, 10], [30, 100], []]
    assert pages[0]["pagination"] == {
        "page": 1,
        "perPage": 3,
        "totalCount": 5,
        "totalPages": 2,
        "hasNextPage": True,
        "hasPreviousPage": False,
    }
    assert pages[1]["pagination"]["hasNextPage"] is False
    assert pages[1]["pagination"]["hasPreviousPage"] is True


# Each bad query with the message it gets; None: the framework's message for a bad parameter.
BAD_QUERIES: list[tuple[dict[str, Any], str | None]] = [
    ({"since": "last week"}, SINCE_MALFORMED),
    ({"since": "2026-02-30"}, SINCE_MALFORMED),
    ({"since": "2026-05-01T12:00:00"}, SINCE_MALFORMED),
    ({"number": "12345"}, rnd_record.NUMBER_INVALID),
    ({"number": "415 555 26"}, rnd_record.NUMBER_INVALID),
    ({"number": "+1415555\x002671"}, rnd_record.NUMBER_INVALID),
    ({"limit": 0}, None),
    ({"limit": 1001}, None),
    ({"page": 0}, None),
    ({"page": "first"}, None),
]


@pytest.mark.parametrize(
    ("params", "message"),
    BAD_QUERIES,
    ids=["-".join(f"{k}={v!r}" for k, v in params.items()) for params, _ in BAD_QUERIES],
)
async def test_a_bad_query_is_400(
    api: httpx.AsyncClient, tenant: Tenant, params: dict[str, Any], message: str | None
) -> None:
    response = await api.get(QUERIES, params=params, headers=tenant.headers)
    said = assert_error(response, 400)
    if message is not None:
        assert said == message
    assert "X-RateLimit-Remaining-Second" in response.headers


async def test_without_a_valid_key_it_is_401_and_without_api_access_403(
    api: httpx.AsyncClient, db: Database
) -> None:
    assert_error(await api.get(QUERIES), 401)
    assert_error(await api.get(QUERIES, headers={"Authorization": "Bearer not-a-key"}), 401)
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    assert "api access" in assert_error(await api.get(QUERIES, headers=free.headers), 403).lower()


def test_the_document_describes_the_operation() -> None:
    operation = document()["paths"][QUERIES]["get"]
    assert operation["operationId"] == "list_reassigned_queries"
    assert operation["description"].startswith("Extension (P195)")
    assert {p["name"] for p in operation["parameters"]} == {"since", "number", "page", "limit"}
    assert {"200", "400", "401", "403", "429"} <= set(operation["responses"])
