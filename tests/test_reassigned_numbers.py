"""The FCC Reassigned Numbers Database (P190-P193): the adapter against a local fake of the
RND query on 127.0.0.1 that serves its documented answers (yes, no, no data), and scoring jobs
on both databases whose contacts carry a ``consentDate``.

Waiting in the adapter's tests is done by the fake clock of tests/test_providers.py, so backoff
and Retry-After are read from the recorded waits instead of being sat through."""

from __future__ import annotations

import base64
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import date
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit.paced_http import Pacing, ProviderUnavailable
from dialscore.scoring import reassigned as rnd_module
from dialscore.scoring.listings import RND
from dialscore.scoring.providers import reassigned_numbers_from_settings
from dialscore.scoring.reassigned import ReassignedNumbers, rnd_answer
from tests.conftest import SECRET
from tests.fakes import Answer, Received, ScriptedService
from tests.support import V2, contact, make_tenant, settle, state_of, submit, without_verdict
from tests.test_providers import FakeClock, pacing_on

USERNAME = "rnd-user-0001"
API_KEY = "fake-rnd-api-key"
CONSENT = date(2025, 3, 1)

REASSIGNED = "+14155552671"
KEPT = "+12125557412"
NO_DATA = "+16175553904"
UNASKED = "+17185556640"
LONDON = "+442079460123"

# What the fake RND answers, by (10-digit number, ISO date); any other US query is "No".
DOCUMENTED: dict[tuple[str, str], str] = {
    (REASSIGNED[2:], CONSENT.isoformat()): "Yes",
    (KEPT[2:], CONSENT.isoformat()): "No",
    (NO_DATA[2:], CONSENT.isoformat()): "No Data",
}


class FakeRND(ScriptedService):
    """The RND query on 127.0.0.1 as P191 reads it: ``GET /query?tn=&date=`` with Basic auth,
    answering ``{"tn", "date", "result"}``; 400 for a query without both."""

    def __init__(self, answers: dict[tuple[str, str], str]) -> None:
        super().__init__()
        self.answers = answers

    def authorized(self, request: Received) -> bool:
        expected = "Basic " + base64.b64encode(f"{USERNAME}:{API_KEY}".encode()).decode()
        return request.headers.get("authorization") == expected

    def who(self, request: Received) -> str:
        """The number a request asks about, as E.164."""
        return "+1" + request.query.get("tn", [""])[0]

    def asked(self) -> list[tuple[str, str]]:
        return sorted((self.who(r), r.query.get("date", [""])[0]) for r in self.received)

    def error(self, status: int) -> dict[str, Any]:
        return {"error": {"code": status, "message": "scripted error"}}

    def answer(self, request: Received) -> tuple[int, dict[str, Any]]:
        if request.method != "GET" or request.path != "/query":
            return 404, self.error(404)
        tn, day = request.query.get("tn", [""])[0], request.query.get("date", [""])[0]
        if len(tn) != 10 or not tn.isdigit() or not day:
            return 400, self.error(400)
        return 200, {"tn": tn, "date": day, "result": self.answers.get((tn, day), "No")}


@pytest.fixture
def fake() -> Iterator[FakeRND]:
    with FakeRND(dict(DOCUMENTED)) as server:
        yield server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@asynccontextmanager
async def rnd(fake: FakeRND, clock: FakeClock, **options: Any) -> AsyncIterator[ReassignedNumbers]:
    pacing = pacing_on(clock, rnd_module.DEFAULT_PACING, options)
    key = options.pop("api_key", API_KEY)
    options.setdefault("base_url", fake.url)
    checker = ReassignedNumbers(USERNAME, key, pacing=pacing, **options)
    try:
        yield checker
    finally:
        await checker.close()


# --- the adapter --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "answer"),
    [
        ("Yes", "yes"),
        ("NO", "no"),
        ("No Data", "no_data"),
        ("no_data", "no_data"),
        ("no-data", "no_data"),
        ("maybe", None),
        (None, None),
        (True, None),
    ],
)
def test_the_rnd_answer_is_read_in_one_place(result: Any, answer: str | None) -> None:
    assert rnd_answer({"result": result}) == answer


async def test_each_documented_answer_is_mapped(fake: FakeRND, clock: FakeClock) -> None:
    queries = [(REASSIGNED, CONSENT), (KEPT, CONSENT), (NO_DATA, CONSENT)]
    async with rnd(fake, clock) as checker:
        found = await checker.check([*queries, (REASSIGNED, CONSENT)])
    assert found == {
        (REASSIGNED, CONSENT): "yes",
        (KEPT, CONSENT): "no",
        (NO_DATA, CONSENT): "no_data",
    }
    # One request per distinct query, the number in 10 digits and the date in ISO form.
    assert fake.asked() == sorted((n, CONSENT.isoformat()) for n, _ in queries)
    assert clock.sleeps == []


async def test_the_same_number_is_asked_again_for_another_date(
    fake: FakeRND, clock: FakeClock
) -> None:
    later = date(2025, 9, 1)
    async with rnd(fake, clock) as checker:
        found = await checker.check([(REASSIGNED, CONSENT), (REASSIGNED, later)])
    assert found == {(REASSIGNED, CONSENT): "yes", (REASSIGNED, later): "no"}
    assert fake.requests_for(REASSIGNED) == 2


async def test_numbers_outside_the_us_plan_are_never_asked(fake: FakeRND, clock: FakeClock) -> None:
    async with rnd(fake, clock) as checker:
        found = await checker.check([(LONDON, CONSENT), ("+11235550100", CONSENT)])
    assert found == {}
    assert fake.received == []


async def test_too_many_requests_and_unavailable_are_retried(
    fake: FakeRND, clock: FakeClock
) -> None:
    fake.script(REASSIGNED, Answer(429, {"Retry-After": "2"}), Answer(503))
    async with rnd(fake, clock) as checker:
        found = await checker.check([(REASSIGNED, CONSENT)])
    assert found == {(REASSIGNED, CONSENT): "yes"}
    assert fake.requests_for(REASSIGNED) == 3
    # Retry-After's 2 s, then the backoff's second step.
    assert clock.sleeps == [2.0, 1.0]


async def test_giving_up_after_retries_leaves_only_that_query_unanswered(
    fake: FakeRND, clock: FakeClock
) -> None:
    fake.script(REASSIGNED, Answer(503), Answer(503), Answer(503))
    with capture_logs() as logs:
        async with rnd(fake, clock) as checker:
            found = await checker.check([(REASSIGNED, CONSENT), (KEPT, CONSENT)])
    assert found == {(KEPT, CONSENT): "no"}
    assert [e["event"] for e in logs if e["event"].startswith("rnd_query_")] == [
        "rnd_query_gave_up"
    ]
    assert REASSIGNED not in repr(logs)  # numbers are masked in logs


async def test_an_outage_makes_the_database_unavailable(fake: FakeRND, clock: FakeClock) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    async with rnd(fake, clock, base_url=f"http://127.0.0.1:{closed_port}") as checker:
        with pytest.raises(ProviderUnavailable, match="cannot connect") as caught:
            await checker.check([(REASSIGNED, CONSENT)])
    assert caught.value.provider == "rnd"
    assert clock.sleeps == [0.5, 1.0]


async def test_refused_credentials_make_the_database_unavailable(
    fake: FakeRND, clock: FakeClock
) -> None:
    async with rnd(fake, clock, api_key="wrong") as checker:
        with pytest.raises(ProviderUnavailable, match="HTTP 401"):
            await checker.check([(REASSIGNED, CONSENT), (KEPT, CONSENT)])
    assert clock.sleeps == []


def rnd_settings(settings: Settings, **values: Any) -> Settings:
    base: dict[str, Any] = {"rnd_username": None, "rnd_api_key": None}
    return settings.model_copy(update={**base, **values})


async def test_settings_configure_and_pace_the_query(settings: Settings, fake: FakeRND) -> None:
    assert reassigned_numbers_from_settings(rnd_settings(settings)) is None
    configured = rnd_settings(
        settings,
        rnd_username=USERNAME,
        rnd_api_key=API_KEY,
        rnd_base_url=fake.url + "/",
        rnd_max_in_flight=3,
        rnd_rate_per_second=7.0,
        rnd_timeout=2.5,
    )
    checker = reassigned_numbers_from_settings(configured)
    assert checker is not None
    try:
        assert checker.pacing == Pacing(max_in_flight=3, rate_per_second=7.0, timeout=2.5)
        assert await checker.check([(KEPT, CONSENT)]) == {(KEPT, CONSENT): "no"}
    finally:
        await checker.close()


@pytest.mark.parametrize(
    ("values", "missing"),
    [
        ({"rnd_username": USERNAME}, "DIALSCORE_RND_API_KEY"),
        ({"rnd_api_key": API_KEY}, "DIALSCORE_RND_USERNAME"),
    ],
)
def test_a_half_configured_database_is_refused_at_start(
    settings: Settings, values: dict[str, str], missing: str
) -> None:
    with pytest.raises(ValueError, match=missing):
        create_app(rnd_settings(settings, **values), run_worker=False)


# --- scoring jobs ---------------------------------------------------------------------------


def configured(settings: Settings, fake: FakeRND) -> Settings:
    return rnd_settings(
        settings,
        rnd_username=USERNAME,
        rnd_api_key=API_KEY,
        rnd_base_url=fake.url,
        rnd_timeout=2.0,
    )


async def scored_phones(
    settings: Settings, records: list[dict[str, Any]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Scores the records in a job of a running app with its worker; the phones of each
    contact (by first name) by number."""
    app = create_app(settings, run_worker=True)
    async with app.router.lifespan_context(app):
        tenant = await make_tenant(state_of(app).db, SECRET, plan="business")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            response = await submit(api, tenant, records)
            assert response.status_code == 200, response.text
            job_id = response.json()["data"]["jobId"]
            await settle(app)
            answer = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
            assert answer.status_code == 200, answer.text
        await settle(app)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in answer.json()["data"]["contacts"]:
        assert entry["rejectedReason"] is None, entry
        # Without the call verdict (P177): it is as of each read, and two reads differ.
        out[entry["firstName"]] = {p["number"]: without_verdict(p) for p in entry["phones"]}
        if "consentDate" in entry["unmappedFields"]:
            # Kept where the spec has no field, as it was given (P190).
            assert entry["unmappedFields"] == {"consentDate": entry_consent(entry["firstName"])}
    return out


def entry_consent(name: str) -> str:
    return "last spring" if name == "Di" else CONSENT.isoformat()


def records() -> list[dict[str, Any]]:
    day = CONSENT.isoformat()
    return [
        # consentDate at the top: kept in unmappedFields, where the spec has no field.
        contact("Ann", "Lee", REASSIGNED, phone2=KEPT, consentDate=day),
        # consentDate given inside unmappedFields; the reassigned number again.
        contact("Bob", "Roe", NO_DATA, phone2=REASSIGNED, unmappedFields={"consentDate": day}),
        contact("Cy", "Poe", UNASKED),
        contact("Di", "Fox", UNASKED, consentDate="last spring"),
        contact("Ed", "Ray", LONDON, consentDate=day),
    ]


def rnd_reasons(phone: dict[str, Any]) -> list[str]:
    return [r for r in phone["reasons"] if "Reassigned Numbers Database" in r or "consent" in r]


async def test_a_job_checks_numbers_with_a_consent_date(settings: Settings, fake: FakeRND) -> None:
    plain = await scored_phones(rnd_settings(settings), records())
    phones = await scored_phones(configured(settings, fake), records())

    ann, bob = phones["Ann"], phones["Bob"]
    assert ann[REASSIGNED]["status"] == "na - auth"
    assert ann[REASSIGNED]["connectRate"] is None
    assert ann[REASSIGNED]["reasons"] == [
        f"reassigned since the consent date 2025-03-01 ({RND})",
        *plain["Ann"][REASSIGNED]["reasons"],
    ]
    assert bob[REASSIGNED]["status"] == "na - auth"
    # Not reassigned: scored as without the database, saying so.
    assert ann[KEPT]["status"] == plain["Ann"][KEPT]["status"]
    assert ann[KEPT]["reasons"] == [
        *plain["Ann"][KEPT]["reasons"],
        f"not reassigned since the consent date 2025-03-01 ({RND})",
    ]
    # No data: said, not guessed.
    assert bob[NO_DATA]["status"] == plain["Bob"][NO_DATA]["status"]
    assert rnd_reasons(bob[NO_DATA]) == [
        "the Reassigned Numbers Database has no data for it since 2025-03-01: not checked"
    ]
    assert phones["Cy"] == plain["Cy"]  # no consent date: not asked, nothing said
    assert phones["Di"][UNASKED]["status"] == plain["Di"][UNASKED]["status"]
    assert rnd_reasons(phones["Di"][UNASKED]) == [
        "consent date not a date: 'last spring': not checked for reassignment"
    ]
    assert phones["Ed"] == plain["Ed"]  # a UK number: the RND knows only US numbers

    # Each distinct (number, date) asked once in the batch: the reassigned number carried by
    # two contacts with the same date included.
    day = CONSENT.isoformat()
    assert fake.asked() == sorted([(REASSIGNED, day), (KEPT, day), (NO_DATA, day)])


async def test_without_the_database_nothing_is_said(settings: Settings, fake: FakeRND) -> None:
    phones = await scored_phones(rnd_settings(settings), records())
    for name, entries in phones.items():
        for number, phone in entries.items():
            assert rnd_reasons(phone) == [], (name, number)
            assert phone["status"] != "na - auth", (name, number)
    assert fake.received == []


async def test_an_outage_scores_the_numbers_without_it_and_says_so(
    settings: Settings, fake: FakeRND
) -> None:
    plain = await scored_phones(rnd_settings(settings), records())
    down = configured(settings, fake)
    fake.stop()  # nothing listens on its port any more
    phones = await scored_phones(down, records())
    not_checked = "the Reassigned Numbers Database did not answer: not checked since 2025-03-01"
    for name, number in [("Ann", REASSIGNED), ("Ann", KEPT), ("Bob", NO_DATA)]:
        phone = phones[name][number]
        assert phone["status"] == plain[name][number]["status"], (name, number)
        assert phone["reasons"] == [*plain[name][number]["reasons"], not_checked]
    assert phones["Cy"] == plain["Cy"]
