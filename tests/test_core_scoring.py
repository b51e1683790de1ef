"""Core scoring end to end: jobs submitted through the API with ``scoringType: core``
and scored by the real worker, whose verification provider is Twilio Lookup configured through
the settings and served by the fake Lookup of tests/test_providers.py on 127.0.0.1.

The fake's own numbers are fictional (555-01xx) and so ``na`` before any line type counts; the
numbers here are ordinary US numbers the fake is told about. Each verified number is compared
with the same number scored by a lightning job in the same app, so that what changed is the
provider's doing (the tests database holds no number blocks: NANP numbers are of unknown type
to lightning)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.jobs import tasks
from dialscore.jobs.service import PROCESS_JOB
from dialscore.models import OutboxMessage
from dialscore.scoring.service import NO_PROVIDER_NOTE, UNVERIFIED_NOTE
from dialscore.worker.context import TaskContext
from tests.conftest import SECRET
from tests.support import (
    V2,
    Tenant,
    contact,
    job_status,
    make_tenant,
    settle,
    state_of,
    submit,
    without_verdict,
)
from tests.test_providers import SID, TOKEN, FakeTwilio, invalid_answer, lookup_answer

MOBILE = "+14155552671"
LANDLINE = "+12125557412"
TOLL_FREE = "+13105558829"  # a geographic number Twilio calls toll-free: lightning would not
NOT_WORKING = "+16175553904"
UNKNOWN = "+17185556640"  # Lookup answers 404
NOT_A_NUMBER = "12"
VERIFIED = (MOBILE, LANDLINE, TOLL_FREE, NOT_WORKING)
LOOKED_UP = {*VERIFIED, UNKNOWN}
NOTES = (NO_PROVIDER_NOTE, UNVERIFIED_NOTE)


def basic_auth(sid: str, token: str) -> str:
    return "Basic " + base64.b64encode(f"{sid}:{token}".encode()).decode()


def contacts() -> list[dict[str, Any]]:
    """Four contacts carrying the five numbers, the mobile twice, and one unparseable number."""
    return [
        contact("Ann", "Lee", MOBILE, phone2=LANDLINE),
        contact("Bob", "Roe", TOLL_FREE, phone2=MOBILE),
        contact("Cy", "Poe", NOT_WORKING),
        contact("Di", "Fox", UNKNOWN, phone2=NOT_A_NUMBER),
    ]


@pytest.fixture
def fake() -> Iterator[FakeTwilio]:
    lines = {
        MOBILE: lookup_answer(MOBILE, "mobile", "T-Mobile USA, Inc."),
        LANDLINE: lookup_answer(LANDLINE, "landline", "AT&T"),
        TOLL_FREE: lookup_answer(TOLL_FREE, "tollFree"),
        NOT_WORKING: invalid_answer(NOT_WORKING, "NOT_A_NUMBER"),
    }
    with FakeTwilio(lines) as server:
        yield server


@dataclass
class Service:
    """A running app with its worker, its API client and a business-plan tenant."""

    app: FastAPI
    api: httpx.AsyncClient
    tenant: Tenant

    async def scored_job(
        self, records: list[dict[str, Any]], scoring_type: str | None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Submits a scoring job, waits for the worker; the job and its phones by number."""
        extra = {} if scoring_type is None else {"scoringType": scoring_type}
        response = await submit(self.api, self.tenant, records, **extra)
        assert response.status_code == 200, response.text
        return await self.job_result(response.json()["data"]["jobId"], len(records))

    async def job_result(
        self, job_id: str, count: int
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Waits for the worker to finish the job; the job and its phones by number."""
        await settle(self.app)
        answer = await self.api.get(f"{V2}/jobs/{job_id}", headers=self.tenant.headers)
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()["data"]
        answer = await self.api.get(f"{V2}/jobs/{job_id}/contacts", headers=self.tenant.headers)
        assert answer.status_code == 200, answer.text
        scored = answer.json()["data"]["contacts"]
        assert len(scored) == count
        phones: dict[str, dict[str, Any]] = {}
        for entry in scored:
            assert entry["rejectedReason"] is None, entry
            for phone in entry["phones"]:
                phones[phone["number"]] = phone
        return job, phones


@asynccontextmanager
async def running(settings: Settings, **update: Any) -> AsyncIterator[Service]:
    """An app with the real worker; Twilio configured only by ``update``."""
    values: dict[str, Any] = {"twilio_account_sid": None, "twilio_auth_token": None, **update}
    app = create_app(settings.model_copy(update=values), run_worker=True)
    async with app.router.lifespan_context(app):
        tenant = await make_tenant(state_of(app).db, SECRET, plan="business")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            yield Service(app, api, tenant)
        await settle(app)


def twilio(fake: FakeTwilio, token: str = TOKEN) -> dict[str, Any]:
    return {
        "twilio_account_sid": SID,
        "twilio_auth_token": token,
        "twilio_base_url": fake.url,
        "twilio_timeout": 2.0,
    }


def assert_finalized(job: dict[str, Any], job_type: str, count: int) -> None:
    assert (job["status"], job["jobType"]) == ("Finalized", job_type), job
    assert job["processedCount"] == count


def assert_lightning_with_note(
    core: dict[str, dict[str, Any]], lightning: dict[str, dict[str, Any]], note: str
) -> None:
    """Every number scored as lightning did; the valid ones with the note added last."""
    assert set(core) == set(lightning) == {*LOOKED_UP, NOT_A_NUMBER}
    for number, phone in core.items():
        plain = lightning[number]
        assert phone["status"] == plain["status"], number
        expected = plain["reasons"] if number == NOT_A_NUMBER else [*plain["reasons"], note]
        assert phone["reasons"] == expected, number


# -- the provider's line type -----------------------------------------------------------------


async def test_core_job_takes_the_line_type_from_twilio(
    settings: Settings, fake: FakeTwilio
) -> None:
    async with running(settings, **twilio(fake)) as service:
        lightning_job, lightning = await service.scored_job(contacts(), "lightning")
        assert fake.received == []
        job, phones = await service.scored_job(contacts(), "core")

    assert_finalized(lightning_job, "lightning_scoring", 4)
    assert_finalized(job, "core_scoring", 4)
    assert job["scoringType"] == "core"
    # Without the provider these would be p2, p2 and p2 (line type unknown): see the baseline.
    assert {lightning[n]["status"] for n in (MOBILE, LANDLINE, TOLL_FREE)} == {"p2"}

    mobile = phones[MOBILE]
    assert mobile["status"] == "p1"
    assert mobile["reasons"][0] == "line type mobile (twilio)"
    landline = phones[LANDLINE]
    assert landline["status"] == "p2"
    assert landline["reasons"][0] == "line type landline (twilio)"
    toll_free = phones[TOLL_FREE]
    assert toll_free["status"] == "p2 - h"
    assert toll_free["reasons"][0] == "line type toll-free (twilio)"
    assert "a company switchboard" in toll_free["reasons"]
    assert phones[NOT_WORKING]["status"] == "na"
    assert phones[NOT_WORKING]["reasons"] == ["not a working number (twilio)"]
    for number in VERIFIED:
        assert not set(NOTES) & set(phones[number]["reasons"]), number

    # Lookup does not know it: scored as lightning scored it, and saying so.
    unknown = phones[UNKNOWN]
    assert unknown["status"] == lightning[UNKNOWN]["status"]
    assert unknown["reasons"] == [*lightning[UNKNOWN]["reasons"], UNVERIFIED_NOTE]
    # Not a number at all: nothing to verify, nothing to say about verifying.
    assert phones[NOT_A_NUMBER] == lightning[NOT_A_NUMBER]
    assert phones[NOT_A_NUMBER]["status"] == "na"

    # One request per distinct number (the mobile is carried twice), each as Twilio wants it.
    assert sorted(fake.who(seen) for seen in fake.received) == sorted(LOOKED_UP)
    for seen in fake.received:
        assert seen.path == "/v2/PhoneNumbers/%2B" + fake.who(seen)[1:]
        assert seen.query == {"Fields": ["line_type_intelligence"]}
        assert seen.headers["authorization"] == basic_auth(SID, TOKEN)


async def test_the_verified_line_type_decides_the_best_phone_and_lead_status(
    settings: Settings, fake: FakeTwilio
) -> None:
    async with running(settings, **twilio(fake)) as service:
        response = await submit(
            service.api,
            service.tenant,
            [contact("Ann", "Lee", LANDLINE, phone2=MOBILE)],
            scoringType="core",
        )
        assert response.status_code == 200, response.text
        await settle(service.app)
        answer = await service.api.get(
            f"{V2}/jobs/{response.json()['data']['jobId']}/contacts",
            headers=service.tenant.headers,
        )
    assert answer.status_code == 200, answer.text
    [scored] = answer.json()["data"]["contacts"]
    assert (scored["phoneStatus"], scored["phone2Status"]) == ("p2", "p1")
    assert scored["leadStatus"] == "P1"
    assert scored["bestPhone"] == {"number": MOBILE, "status": "p1", "ivrPath": None}


@pytest.mark.parametrize("scoring_type", [None, "lightning"])
async def test_lightning_job_never_asks_the_provider(
    settings: Settings, fake: FakeTwilio, scoring_type: str | None
) -> None:
    async with running(settings, **twilio(fake)) as service:
        job, phones = await service.scored_job(contacts(), scoring_type)
    assert fake.received == []
    assert_finalized(job, "lightning_scoring", 4)
    assert job["scoringType"] != "core"
    assert set(phones) == {*LOOKED_UP, NOT_A_NUMBER}
    for number, phone in phones.items():
        assert phone["status"] is not None, number
        assert "(twilio)" not in " ".join(phone["reasons"]), number
        assert not set(NOTES) & set(phone["reasons"]), number


# -- no answer from a provider ----------------------------------------------------------------


async def test_core_job_without_a_provider_is_lightning_with_a_note(settings: Settings) -> None:
    async with running(settings) as service:
        _, lightning = await service.scored_job(contacts(), "lightning")
        job, core = await service.scored_job(contacts(), "core")
    assert_finalized(job, "core_scoring", 4)
    assert_lightning_with_note(core, lightning, NO_PROVIDER_NOTE)


async def test_refused_credentials_leave_the_job_scored_as_lightning(
    settings: Settings, fake: FakeTwilio
) -> None:
    async with running(settings, **twilio(fake, token="wrong-token")) as service:
        _, lightning = await service.scored_job(contacts(), "lightning")
        job, core = await service.scored_job(contacts(), "core")
    assert_finalized(job, "core_scoring", 4)
    assert_lightning_with_note(core, lightning, UNVERIFIED_NOTE)
    # The provider was asked, with the configured (wrong) credentials, and refused.
    assert fake.received
    assert {fake.who(seen) for seen in fake.received} <= LOOKED_UP
    assert {seen.headers["authorization"] for seen in fake.received} == {
        basic_auth(SID, "wrong-token")
    }


async def test_an_unreachable_provider_leaves_the_job_scored_as_lightning(
    settings: Settings, fake: FakeTwilio
) -> None:
    configured = twilio(fake)
    fake.stop()  # nothing listens on its port any more
    async with running(settings, **configured) as service:
        _, lightning = await service.scored_job(contacts(), "lightning")
        job, core = await service.scored_job(contacts(), "core")
    assert_finalized(job, "core_scoring", 4)
    assert_lightning_with_note(core, lightning, UNVERIFIED_NOTE)


async def test_rescoring_a_core_job_verifies_again(settings: Settings, fake: FakeTwilio) -> None:
    async with running(settings, **twilio(fake)) as service:
        first, before = await service.scored_job(contacts(), "core")
        assert before[LANDLINE]["status"] == "p2"
        # The line was ported to a mobile network since: a rescore must see it.
        fake.lines[LANDLINE] = lookup_answer(LANDLINE, "mobile", "Verizon Wireless")
        response = await service.api.post(
            f"{V2}/jobs/{first['id']}/rescore", json={}, headers=service.tenant.headers
        )
        assert response.status_code == 200, response.text
        job, after = await service.job_result(response.json()["data"]["jobId"], 4)

    assert_finalized(job, "rescoring", 4)
    assert job["scoringType"] == "core"
    assert after[LANDLINE]["status"] == "p1"
    assert after[LANDLINE]["reasons"][0] == "line type mobile (twilio)"
    # The other numbers score as before (their call verdicts are as of each read).
    assert {n: without_verdict(after[n]) for n in after if n != LANDLINE} == {
        n: without_verdict(before[n]) for n in before if n != LANDLINE
    }
    assert fake.requests_for(LANDLINE) == 2


# -- bugs -------------------------------------------------------------------------------------


async def test_an_unknown_line_type_is_scored_as_lightning_and_says_so(
    settings: Settings, fake: FakeTwilio
) -> None:
    fake.lines[UNKNOWN] = lookup_answer(UNKNOWN, "unknown")
    async with running(settings, **twilio(fake)) as service:
        _, lightning = await service.scored_job(contacts(), "lightning")
        _, core = await service.scored_job(contacts(), "core")
    assert fake.requests_for(UNKNOWN) == 1
    assert core[UNKNOWN]["status"] == lightning[UNKNOWN]["status"]
    # docs/scoring.md: "for a number no provider could verify, core scoring equals lightning
    # and the number's reasons say so".
    assert core[UNKNOWN]["reasons"] != lightning[UNKNOWN]["reasons"]


async def test_half_configured_twilio_is_refused_at_start_or_spares_lightning_jobs(
    settings: Settings,
) -> None:
    half = settings.model_copy(update={"twilio_account_sid": SID, "twilio_auth_token": None})
    try:
        started = create_app(half, run_worker=True)
        async with started.router.lifespan_context(started):
            pass
    except ValueError as refusal:
        # Refusing the configuration before any job is taken is a fix too.
        assert "DIALSCORE_TWILIO_AUTH_TOKEN" in str(refusal)
        return
    # It starts: then a lightning job, which needs no provider, must still be processed. The
    # task is run here directly (an API-only app queues it), so its retries are not waited for.
    app = create_app(half, run_worker=False)
    async with app.router.lifespan_context(app):
        db = state_of(app).db
        tenant = await make_tenant(db, SECRET, plan="business")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            response = await submit(api, tenant, contacts(), scoringType="lightning")
            assert response.status_code == 200, response.text
            job_id = response.json()["data"]["jobId"]
            async with db.read() as session:
                message = await session.scalar(
                    select(OutboxMessage).where(OutboxMessage.actor == PROCESS_JOB)
                )
            assert message is not None
            assert message.payload == {"job_id": job_id}
            await tasks.process_job(TaskContext(half, db), outbox_id=message.id, job_id=job_id)
            assert await job_status(db, job_id) == "Finalized"
