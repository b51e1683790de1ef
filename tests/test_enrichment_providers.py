"""Enrichment providers: the People Data Labs and Apollo adapters against local fakes of
their documented answers on 127.0.0.1, and the settings that turn them on.

Waiting is done by an injected clock and sleep, so backoff, Retry-After and pacing are read
from the recorded waits instead of being sat through; only request timeouts take real time
(a fraction of a second each)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from dialscore.config import Settings
from dialscore.enrichment import apollo as apollo_module
from dialscore.enrichment import pdl as pdl_module
from dialscore.enrichment.apollo import ApolloPeopleMatch, apollo_body, domain_of
from dialscore.enrichment.pdl import PeopleDataLabs, pdl_params, seconds_until_reset
from dialscore.enrichment.providers import EnrichmentProvider, found_phones
from dialscore.enrichment.service import enrichment_providers_from_settings
from dialscore.enrichment.waterfall import (
    Enrichment,
    EnrichmentRequest,
    EnrichmentSource,
    FoundPhone,
    run_waterfall,
)
from dialscore.kit.paced_http import Pacing
from dialscore.scoring.providers import ProviderUnavailable
from tests.fakes import Answer, Received, ScriptedService
from tests.test_providers import HOLD, FakeClock, pacing_on

PDL_KEY = "pdl-test-key-0123456789"
APOLLO_KEY = "apollo-test-key-abcdef"


def json_body(request: Received) -> Any:
    return request.json() if request.body else None


class KeyedService(ScriptedService):
    """A provider that takes its key in ``X-Api-Key``."""

    api_key = ""

    def authorized(self, request: Received) -> bool:
        return request.headers.get("x-api-key") == self.api_key


# --- People Data Labs -------------------------------------------------------------------------


def pdl_record(
    record_id: str,
    first: str,
    last: str,
    email: str,
    *,
    mobile: Any = None,
    numbers: Any = None,
    company: str = "acme",
    linkedin: str | None = None,
) -> dict[str, Any]:
    """A documented person record (the fields this adapter reads, and some around them)."""
    return {
        "id": record_id,
        "full_name": f"{first} {last}".lower(),
        "first_name": first.lower(),
        "last_name": last.lower(),
        "sex": None,
        "linkedin_url": linkedin,
        "work_email": email,
        "personal_emails": [],
        "emails": [{"address": email, "type": "current_professional"}],
        "mobile_phone": mobile,
        "phone_numbers": numbers if numbers is not None else [],
        "job_title": "head of operations",
        "job_company_name": company,
        "job_company_website": f"{company}.com",
        "location_name": "san francisco, california, united states",
    }


@dataclass
class PdlPerson:
    record: dict[str, Any]
    likelihood: int


class FakePDL(KeyedService):
    """``GET /v5/person/enrich`` as documented: X-Api-Key, the query parameters, 200 with
    ``{status, likelihood, data}``, 404 below ``min_likelihood`` or without a ``required``
    field, and ``{status, error: {type, message}}`` errors."""

    api_key = PDL_KEY
    ERROR_TYPES: ClassVar[dict[int, str]] = {
        400: "invalid_request_error",
        401: "authentication_error",
        402: "payment_required",
        403: "forbidden",
        404: "not_found",
        405: "invalid_request_error",
        429: "rate_limit_error",
    }

    def __init__(self, people: list[PdlPerson]) -> None:
        super().__init__()
        self.people = people

    def who(self, request: Received) -> str:
        for name in ("email", "profile"):
            if name in request.query:
                return request.query[name][0]
        return " ".join(request.query.get("first_name", []) + request.query.get("last_name", []))

    def error(self, status: int) -> Any:
        kind = self.ERROR_TYPES.get(status, "api_error")
        return {"status": status, "error": {"type": kind, "message": f"Scripted {kind}"}}

    def answer(self, request: Received) -> tuple[int, Any]:
        if request.method != "GET" or request.path != "/v5/person/enrich":
            return 404, self.error(404)
        query = {name: values[0] for name, values in request.query.items()}
        min_likelihood = int(query.get("min_likelihood", "2"))
        for person in self.people:
            record = person.record
            if not self._matches(record, query):
                continue
            if person.likelihood < min_likelihood:
                break
            required = query.get("required")
            if required and not record.get(required):
                break
            return 200, {"status": 200, "likelihood": person.likelihood, "data": record}
        return 404, {
            "status": 404,
            "error": {
                "type": "not_found",
                "message": "No records were found matching your request",
            },
        }

    @staticmethod
    def _matches(record: dict[str, Any], query: dict[str, str]) -> bool:
        if query.get("email", "").lower() == record["work_email"]:
            return True
        profile = query.get("profile")
        if profile is not None and profile == record["linkedin_url"]:
            return True
        return bool(
            query.get("first_name", "").lower() == record["first_name"]
            and query.get("last_name", "").lower() == record["last_name"]
            and query.get("company", "").lower() == record["job_company_name"]
        )


SEAN = pdl_record(
    "qEnOZ5Oh0poWnQ1luFBfVw_0000",
    "Sean",
    "Thorne",
    "sean@acme.com",
    mobile="+14155688415",
    numbers=["+14155688415", "(415) 555-0142", "+44 20 7946 0000"],
    linkedin="linkedin.com/in/seanthorne",
)
NO_NUMBERS = pdl_record("pdl_nonumbers_0001", "Nora", "Numbers", "nora@acme.com")
HIDDEN = pdl_record("pdl_hidden_0002", "Hana", "Hidden", "hana@acme.com", mobile=True, numbers=True)
UNUSABLE = pdl_record("pdl_bad_0003", "Ugo", "Unusable", "ugo@acme.com", numbers=["+1555", "12"])
UNSURE = pdl_record("pdl_unsure_0004", "Uma", "Unsure", "uma@acme.com", numbers=["+12125550188"])


def pdl_people() -> list[PdlPerson]:
    return [
        PdlPerson(SEAN, 9),
        PdlPerson(NO_NUMBERS, 10),
        PdlPerson(HIDDEN, 8),
        PdlPerson(UNUSABLE, 8),
        PdlPerson(UNSURE, 5),
    ]


def many_pdl_people(count: int) -> list[PdlPerson]:
    return [
        PdlPerson(
            pdl_record(
                f"pdl_many_{index:04d}",
                "Many",
                f"Person{index}",
                f"many{index}@acme.com",
                numbers=[f"+1212555{index:04d}"],
            ),
            8,
        )
        for index in range(count)
    ]


def contact(
    email: str | None = None, contact_id: str = "contact-1", **fields: str
) -> EnrichmentRequest:
    values = {"email": email, **fields} if email else dict(fields)
    return EnrichmentRequest("client-1", contact_id, values)


@pytest.fixture
def pdl_fake() -> Iterator[FakePDL]:
    with FakePDL(pdl_people()) as server:
        yield server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@asynccontextmanager
async def pdl(fake: FakePDL, clock: FakeClock, **options: Any) -> AsyncIterator[PeopleDataLabs]:
    pacing = pacing_on(clock, pdl_module.DEFAULT_PACING, options)
    key = options.pop("api_key", PDL_KEY)
    options.setdefault("base_url", fake.url)
    source = PeopleDataLabs(key, pacing=pacing, **options)
    try:
        yield source
    finally:
        await source.close()


async def test_pdl_match_gives_e164_numbers_with_the_mobile_hinted(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    request = contact(
        "sean@acme.com",
        firstName="Sean",
        lastName="Thorne",
        companyAccount="Acme",
        website="https://acme.com",
        linkedInUrl="linkedin.com/in/seanthorne",
        phone="+14155550000",
    )
    async with pdl(pdl_fake, clock) as source:
        found = await source.find(request)

    assert found == Enrichment(
        (
            FoundPhone("+14155688415", "mobile"),
            FoundPhone("+14155550142", None),
            FoundPhone("+442079460000", None),
        ),
        "pdl:qEnOZ5Oh0poWnQ1luFBfVw_0000",
        "pdl",
        0.9,
    )
    [seen] = pdl_fake.received
    assert (seen.method, seen.path, seen.headers["x-api-key"]) == (
        "GET",
        "/v5/person/enrich",
        PDL_KEY,
    )
    assert seen.query == {
        "first_name": ["Sean"],
        "last_name": ["Thorne"],
        "company": ["Acme"],
        "email": ["sean@acme.com"],
        "profile": ["linkedin.com/in/seanthorne"],
        "min_likelihood": ["6"],
        "required": ["phone_numbers"],
    }
    assert clock.sleeps == []


async def test_pdl_company_falls_back_to_the_website_then_the_company_page(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    async with pdl(pdl_fake, clock) as source:
        await source.find(contact(firstName="A", lastName="B", website="acme.com"))
        await source.find(
            contact(firstName="C", lastName="D", companyLinkedInUrl="linkedin.com/company/acme")
        )
    assert [seen.query["company"] for seen in pdl_fake.received] == [
        ["acme.com"],
        ["linkedin.com/company/acme"],
    ]


async def test_pdl_no_match_is_none_without_retries(pdl_fake: FakePDL, clock: FakeClock) -> None:
    async with pdl(pdl_fake, clock) as source:
        assert await source.find(contact("nobody@acme.com")) is None
    assert pdl_fake.requests_for("nobody@acme.com") == 1
    assert clock.sleeps == []


async def test_pdl_match_without_numbers_is_none(pdl_fake: FakePDL, clock: FakeClock) -> None:
    async with pdl(pdl_fake, clock) as source:
        # PDL itself answers 404 for it: required=phone_numbers.
        assert await source.find(contact("nora@acme.com")) is None
        # The only numbers are not numbers at all.
        assert await source.find(contact("ugo@acme.com")) is None
    assert pdl_fake.requests_for("nora@acme.com") == 1


async def test_pdl_numbers_hidden_by_the_plan_are_none_and_logged_once(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    with capture_logs() as logs:
        async with pdl(pdl_fake, clock) as source:
            for _ in range(2):
                assert await source.find(contact("hana@acme.com")) is None
    assert [entry["event"] for entry in logs if entry["log_level"] == "error"] == [
        "pdl_enrich_numbers_hidden"
    ]


async def test_pdl_min_likelihood_is_sent_and_sets_the_confidence(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    async with pdl(pdl_fake, clock) as source:
        assert await source.find(contact("uma@acme.com")) is None
    async with pdl(pdl_fake, clock, min_likelihood=4) as source:
        found = await source.find(contact("uma@acme.com"))
    assert found is not None
    assert (found.phones, found.confidence) == ((FoundPhone("+12125550188"),), 0.5)
    assert [seen.query["min_likelihood"] for seen in pdl_fake.received] == [["6"], ["4"]]


@pytest.mark.parametrize("likelihood", [0, 11])
def test_pdl_refuses_a_likelihood_it_does_not_have(likelihood: int) -> None:
    with pytest.raises(ValueError, match="min_likelihood"):
        PeopleDataLabs(PDL_KEY, min_likelihood=likelihood)


async def test_pdl_is_not_asked_about_a_contact_it_cannot_match(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    async with pdl(pdl_fake, clock) as source:
        assert await source.find(contact(firstName="Sean", lastName="Thorne")) is None
        assert await source.find(contact(companyAccount="Acme", phone="+14155688415")) is None
    assert pdl_fake.received == []


@pytest.mark.parametrize(
    ("fields", "params"),
    [
        ({"email": " a@b.co "}, {"email": "a@b.co"}),
        ({"linkedInUrl": "linkedin.com/in/x"}, {"profile": "linkedin.com/in/x"}),
        (
            {"firstName": "A", "lastName": "B", "companyAccount": "C", "website": "c.com"},
            {"first_name": "A", "last_name": "B", "company": "C"},
        ),
        ({"firstName": "A", "lastName": "B"}, None),
        ({"firstName": "A", "companyAccount": "C"}, None),
        ({"email": "", "linkedInUrl": "   "}, None),
        ({"email": 42}, None),
    ],
)
def test_pdl_params_follow_the_documented_minimum(
    fields: dict[str, Any], params: dict[str, str] | None
) -> None:
    assert pdl_params(fields) == params


async def test_pdl_unreadable_answer_is_none(pdl_fake: FakePDL, clock: FakeClock) -> None:
    pdl_fake.script("sean@acme.com", Answer(200, body=b"<html>oops</html>"))
    pdl_fake.script("nora@acme.com", Answer(200, body=b'{"status": 200, "data": null}'))
    with capture_logs() as logs:
        async with pdl(pdl_fake, clock) as source:
            assert await source.find(contact("sean@acme.com")) is None
            assert await source.find(contact("nora@acme.com")) is None
    assert [entry["event"] for entry in logs] == ["pdl_enrich_unreadable"] * 2


async def test_pdl_refused_key_makes_the_provider_unavailable_logged_once(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    with capture_logs() as logs:
        async with pdl(pdl_fake, clock, api_key="wrong-key") as source:
            for _ in range(2):
                with pytest.raises(ProviderUnavailable) as caught:
                    await source.find(contact("sean@acme.com"))
                assert caught.value.provider == "pdl"
                assert "HTTP 401" in str(caught.value)
    refusals = [entry for entry in logs if entry["event"] == "enrichment_provider_refused"]
    assert [(entry["status"], entry["message"]) for entry in refusals] == [
        (401, "Scripted authentication_error")
    ]
    assert len(pdl_fake.received) == 2  # refusals are not retried
    assert clock.sleeps == []
    assert "wrong-key" not in json.dumps(logs)


@pytest.mark.parametrize(("status", "reason"), [(402, "out of credits"), (403, "HTTP 403")])
async def test_pdl_out_of_credits_or_forbidden_is_unavailable(
    pdl_fake: FakePDL, clock: FakeClock, status: int, reason: str
) -> None:
    pdl_fake.script("sean@acme.com", Answer(status))
    async with pdl(pdl_fake, clock) as source:
        with pytest.raises(ProviderUnavailable, match=reason):
            await source.find(contact("sean@acme.com"))


async def test_pdl_bad_request_is_none_without_retries(pdl_fake: FakePDL, clock: FakeClock) -> None:
    pdl_fake.script("sean@acme.com", Answer(400))
    with capture_logs() as logs:
        async with pdl(pdl_fake, clock) as source:
            assert await source.find(contact("sean@acme.com")) is None
    assert pdl_fake.requests_for("sean@acme.com") == 1
    assert [(entry["event"], entry["status"], entry["message"]) for entry in logs] == [
        ("pdl_enrich_rejected", 400, "Scripted invalid_request_error")
    ]
    assert "sean@acme.com" not in json.dumps(logs)


async def test_pdl_too_many_requests_waits_as_retry_after_says_then_finds(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    pdl_fake.script("sean@acme.com", Answer(429, {"Retry-After": "7"}))
    async with pdl(pdl_fake, clock) as source:
        found = await source.find(contact("sean@acme.com"))
    assert found is not None and found.record_id == "pdl:qEnOZ5Oh0poWnQ1luFBfVw_0000"
    assert pdl_fake.requests_for("sean@acme.com") == 2
    assert clock.sleeps == [7.0]


async def test_pdl_too_many_requests_waits_for_the_window_reset(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    reset = datetime.fromtimestamp(time.time() + 12, UTC).isoformat()
    pdl_fake.script("sean@acme.com", Answer(429, {"x-ratelimit-reset": reset}))
    async with pdl(pdl_fake, clock) as source:
        assert await source.find(contact("sean@acme.com")) is not None
    waited, *after = clock.sleeps
    assert 10.0 < waited <= 12.0
    # The bucket, held as long, may round to a last nanosecond of wait; no more.
    assert sum(after) < 1e-6


async def test_pdl_retry_after_is_capped(pdl_fake: FakePDL, clock: FakeClock) -> None:
    pdl_fake.script("sean@acme.com", Answer(429, {"Retry-After": "3600"}))
    async with pdl(pdl_fake, clock, max_retry_after=20.0) as source:
        assert await source.find(contact("sean@acme.com")) is not None
    assert clock.sleeps == [20.0]


async def test_pdl_retry_after_holds_every_request_of_the_provider(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    pdl_fake.script("sean@acme.com", Answer(429, {"Retry-After": "4"}))
    async with pdl(pdl_fake, clock, burst=1.0, max_retries=0) as source:
        assert await source.find(contact("sean@acme.com")) is None
        assert clock.sleeps == []
        assert await source.find(contact("uma@acme.com", contact_id="2")) is None
    assert clock.sleeps == [pytest.approx(4.0)]


async def test_pdl_server_errors_are_retried_then_given_up(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    pdl_fake.script("sean@acme.com", Answer(500), Answer(502), Answer(503), Answer(200))
    with capture_logs() as logs:
        async with pdl(pdl_fake, clock) as source:
            assert await source.find(contact("sean@acme.com", contact_id="c-77")) is None
    assert pdl_fake.requests_for("sean@acme.com") == 3
    assert clock.sleeps == [0.5, 1.0]
    gave_up = [entry for entry in logs if entry["event"] == "enrichment_provider_gave_up"]
    assert [(e["provider"], e["contact_id"], e["attempts"], e["problem"]) for e in gave_up] == [
        ("pdl", "c-77", 3, "HTTP 503")
    ]
    assert "sean@acme.com" not in json.dumps(logs)  # contacts are named by id only


async def test_pdl_server_error_then_success_finds(pdl_fake: FakePDL, clock: FakeClock) -> None:
    pdl_fake.script("sean@acme.com", Answer(502))
    async with pdl(pdl_fake, clock) as source:
        assert await source.find(contact("sean@acme.com")) is not None
    assert clock.sleeps == [0.5]


async def test_pdl_slow_answer_times_out_and_is_retried(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    pdl_fake.script("sean@acme.com", HOLD)
    async with pdl(pdl_fake, clock, timeout=0.2) as source:
        found = await source.find(contact("sean@acme.com"))
    assert found is not None
    assert pdl_fake.requests_for("sean@acme.com") == 2
    assert clock.sleeps == [0.5]


async def test_pdl_answers_that_never_come_are_none(pdl_fake: FakePDL, clock: FakeClock) -> None:
    pdl_fake.script("sean@acme.com", HOLD, HOLD)
    with capture_logs() as logs:
        async with pdl(pdl_fake, clock, timeout=0.2, max_retries=1) as source:
            assert await source.find(contact("sean@acme.com")) is None
    assert pdl_fake.requests_for("sean@acme.com") == 2
    assert [entry["problem"] for entry in logs] == ["no answer within 0.2 s"]


async def test_pdl_that_cannot_be_reached_is_unavailable(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    async with pdl(pdl_fake, clock, base_url=f"http://127.0.0.1:{closed_port}") as source:
        with pytest.raises(ProviderUnavailable, match="cannot connect"):
            await source.find(contact("sean@acme.com"))
    assert clock.sleeps == [0.5, 1.0]


async def test_pdl_requests_in_flight_are_capped(pdl_fake: FakePDL, clock: FakeClock) -> None:
    people = many_pdl_people(12)
    pdl_fake.people.extend(people)
    pdl_fake.gather = 3
    requests = [
        contact(person.record["work_email"], contact_id=str(index))
        for index, person in enumerate(people)
    ]
    async with pdl(pdl_fake, clock, max_in_flight=3, timeout=5.0) as source:
        found = await asyncio.wait_for(
            asyncio.gather(*(source.find(request) for request in requests)), 30
        )
    assert all(result is not None for result in found)
    assert len(pdl_fake.received) == 12
    assert pdl_fake.max_in_flight == 3


async def test_pdl_requests_are_paced_by_the_rate_limit(
    pdl_fake: FakePDL, clock: FakeClock
) -> None:
    people = many_pdl_people(5)
    pdl_fake.people.extend(people)
    start = clock.now
    async with pdl(pdl_fake, clock, rate_per_second=10.0, burst=1.0, max_in_flight=5) as source:
        found = await asyncio.gather(
            *(source.find(contact(person.record["work_email"])) for person in people)
        )
    assert all(result is not None for result in found)
    # Five at once, at 10 a second: the first goes now, each other one 0.1 s after the last.
    assert clock.sleeps == pytest.approx([0.1] * 4)
    assert clock.now - start == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1700000030", 30.0),  # epoch seconds
        ("1700000030000", 30.0),  # epoch milliseconds
        ("45", 45.0),  # seconds from now
        ("2023-11-14T22:13:40+00:00", 20.0),
        ("2023-11-14T22:13:40Z", 20.0),
        ("Tue, 14 Nov 2023 22:13:40 GMT", 20.0),
        ("1699999990", 0.0),  # already past
        ("2023-11-14T22:13:40", None),  # no time zone
        ('{"minute": 60}', None),
        ("nan", None),
        ("", None),
        (None, None),
    ],
)
def test_rate_limit_reset_reads_the_usual_spellings(
    value: str | None, seconds: float | None
) -> None:
    now = datetime.fromtimestamp(1_700_000_000, UTC)
    assert seconds_until_reset(value, now) == seconds


# --- Apollo -------------------------------------------------------------------------------------


def apollo_person(
    person_id: str,
    first: str,
    last: str,
    email: str,
    phone_numbers: list[dict[str, Any]] | None,
    *,
    linkedin: str | None = None,
) -> dict[str, Any]:
    """A documented person of a people/match answer (the fields read, and some around them)."""
    return {
        "id": person_id,
        "first_name": first,
        "last_name": last,
        "name": f"{first} {last}",
        "linkedin_url": linkedin,
        "title": "VP Sales",
        "email_status": "verified",
        "email": email,
        "organization_id": "5e66b6381e05b4008c8331b8",
        "phone_numbers": phone_numbers,
        "organization": {
            "id": "5e66b6381e05b4008c8331b8",
            "name": "Acme",
            "website_url": "http://www.acme.com",
            "primary_domain": "acme.com",
            "primary_phone": {
                "number": "+1 415-555-0100",
                "source": "Account",
                "sanitized_number": "+14155550100",
            },
        },
    }


def apollo_phone(raw: str, sanitized: str | None, kind: str | None, key: str = "type") -> Any:
    return {
        "raw_number": raw,
        "sanitized_number": sanitized,
        key: kind,
        "position": 0,
        "status": "valid_number",
    }


TIM = apollo_person(
    "587cf802f65125cad923a266",
    "Tim",
    "Zheng",
    "tim@acme.com",
    [
        apollo_phone("+1 415-555-0101", "+14155550101", "mobile"),
        apollo_phone("(415) 555-0102", None, "work_direct"),
        apollo_phone("+1 415-555-0103", "+14155550103", "work"),
        apollo_phone("+1 415-555-0100", "+14155550100", "work_hq"),
        apollo_phone("+1 415-555-0104", "+14155550104", "home"),
        apollo_phone("+1 415-555-0105", "+14155550105", None),
        apollo_phone("+1 415-555-0106", "+14155550106", "mobile", key="type_cd"),
        apollo_phone("+1 415-555-0101", "+14155550101", "work"),  # again: kept once
    ],
    linkedin="http://www.linkedin.com/in/tim-zheng-677ba010",
)
NO_PHONES = apollo_person("5f2a1c0e9d8b7a6f5e4d3c2b", "Pat", "Plain", "pat@acme.com", [])
NULL_PHONES = apollo_person("5f2a1c0e9d8b7a6f5e4d3c2c", "Nul", "Null", "nul@acme.com", None)


class FakeApollo(KeyedService):
    """``POST /api/v1/people/match`` as documented: X-Api-Key, a JSON body of match
    parameters, ``{"person": {...}}`` or ``{"person": null}``; a phone reveal without a
    ``webhook_url`` refused as Apollo documents."""

    api_key = APOLLO_KEY
    PARAMETERS: ClassVar[frozenset[str]] = frozenset(
        {
            "first_name",
            "last_name",
            "name",
            "email",
            "hashed_email",
            "organization_name",
            "domain",
            "id",
            "linkedin_url",
            "reveal_personal_emails",
            "reveal_phone_number",
            "webhook_url",
        }
    )

    def __init__(self, people: list[dict[str, Any]]) -> None:
        super().__init__()
        self.people = people

    def who(self, request: Received) -> str:
        body = json_body(request)
        body = body if isinstance(body, dict) else {}
        return str(body.get("email") or body.get("linkedin_url") or body.get("last_name"))

    def error(self, status: int) -> Any:
        if status == 401:
            return {"error": "Invalid access credentials.", "error_code": "INVALID_API_KEY"}
        if status == 403:
            return {
                "error": "api/v1/people/match is not accessible with this api_key",
                "error_code": "API_INACCESSIBLE",
            }
        if status == 429:
            return {"message": "The maximum number of api calls allowed for this endpoint"}
        return {"error": f"Scripted {status}"}

    def answer(self, request: Received) -> tuple[int, Any]:
        if request.method != "POST" or request.path != "/api/v1/people/match":
            return 404, {"error": "Not found"}
        body = json_body(request)
        if not isinstance(body, dict) or not set(body) <= self.PARAMETERS:
            return 422, {"error": "Unknown parameters"}
        if body.get("reveal_phone_number") and not body.get("webhook_url"):
            return 400, {"error": "Please add a valid 'webhook_url' parameter"}
        for person in self.people:
            if body.get("email") == person["email"] or (
                body.get("linkedin_url") and body.get("linkedin_url") == person["linkedin_url"]
            ):
                return 200, {"person": person}
        return 200, {"person": None}


@pytest.fixture
def apollo_fake() -> Iterator[FakeApollo]:
    with FakeApollo([TIM, NO_PHONES, NULL_PHONES]) as server:
        yield server


@asynccontextmanager
async def apollo(
    fake: FakeApollo, clock: FakeClock, **options: Any
) -> AsyncIterator[ApolloPeopleMatch]:
    pacing = pacing_on(clock, apollo_module.DEFAULT_PACING, options)
    key = options.pop("api_key", APOLLO_KEY)
    options.setdefault("base_url", fake.url)
    source = ApolloPeopleMatch(key, pacing=pacing, **options)
    try:
        yield source
    finally:
        await source.close()


async def test_apollo_match_gives_e164_numbers_with_mapped_types(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    request = contact(
        "tim@acme.com",
        firstName="Tim",
        lastName="Zheng",
        companyAccount="Acme",
        website="https://www.acme.com/about",
        linkedInUrl="http://www.linkedin.com/in/tim-zheng-677ba010",
        companyLinkedInUrl="linkedin.com/company/acme",
        phone="+14155550000",
    )
    async with apollo(apollo_fake, clock) as source:
        found = await source.find(request)

    assert found == Enrichment(
        (
            FoundPhone("+14155550101", "mobile"),
            FoundPhone("+14155550102", "direct"),
            FoundPhone("+14155550103", "direct"),
            FoundPhone("+14155550100", "hq"),
            FoundPhone("+14155550104", "other"),
            FoundPhone("+14155550105", None),
            FoundPhone("+14155550106", "mobile"),
        ),
        "apollo:587cf802f65125cad923a266",
        "apollo",
    )
    [seen] = apollo_fake.received
    assert (seen.method, seen.path, seen.headers["x-api-key"]) == (
        "POST",
        "/api/v1/people/match",
        APOLLO_KEY,
    )
    assert seen.headers["content-type"] == "application/json"
    # No reveal: Apollo delivers revealed numbers only to a webhook, minutes later.
    assert seen.json() == {
        "first_name": "Tim",
        "last_name": "Zheng",
        "organization_name": "Acme",
        "domain": "acme.com",
        "email": "tim@acme.com",
        "linkedin_url": "http://www.linkedin.com/in/tim-zheng-677ba010",
    }
    assert seen.query == {}  # nothing about the contact in the URL


async def test_apollo_no_person_is_none(apollo_fake: FakeApollo, clock: FakeClock) -> None:
    async with apollo(apollo_fake, clock) as source:
        assert await source.find(contact("nobody@acme.com")) is None
    assert apollo_fake.requests_for("nobody@acme.com") == 1
    assert clock.sleeps == []


async def test_apollo_person_without_numbers_is_none(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    async with apollo(apollo_fake, clock) as source:
        assert await source.find(contact("pat@acme.com")) is None
        assert await source.find(contact("nul@acme.com")) is None
    assert len(apollo_fake.received) == 2


async def test_apollo_is_not_asked_about_a_contact_it_cannot_match(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    async with apollo(apollo_fake, clock) as source:
        assert await source.find(contact(firstName="Tim", lastName="Zheng")) is None
    assert apollo_fake.received == []


@pytest.mark.parametrize(
    ("fields", "body"),
    [
        ({"email": "a@b.co"}, {"email": "a@b.co"}),
        ({"linkedInUrl": "linkedin.com/in/x"}, {"linkedin_url": "linkedin.com/in/x"}),
        (
            {"firstName": "A", "lastName": "B", "website": "www.c.com"},
            {"first_name": "A", "last_name": "B", "domain": "c.com"},
        ),
        (
            {"firstName": "A", "lastName": "B", "companyAccount": "C"},
            {"first_name": "A", "last_name": "B", "organization_name": "C"},
        ),
        ({"firstName": "A", "lastName": "B", "companyLinkedInUrl": "linkedin.com/c"}, None),
        ({"lastName": "B", "companyAccount": "C"}, None),
    ],
)
def test_apollo_body_needs_an_identity(fields: dict[str, Any], body: dict[str, str] | None) -> None:
    assert apollo_body(fields) == body


@pytest.mark.parametrize(
    ("website", "domain"),
    [
        ("https://www.acme.com/about", "acme.com"),
        ("acme.com", "acme.com"),
        ("WWW.Acme.COM", "acme.com"),
        ("http://shop.acme.co.uk:8080/x?y", "shop.acme.co.uk"),
        ("", ""),
        ("http://[::1", ""),
    ],
)
def test_domain_of_a_website(website: str, domain: str) -> None:
    assert domain_of(website) == domain


@pytest.mark.parametrize("status", [401, 403])
async def test_apollo_refused_key_makes_the_provider_unavailable(
    apollo_fake: FakeApollo, clock: FakeClock, status: int
) -> None:
    apollo_fake.script("tim@acme.com", Answer(status))
    with capture_logs() as logs:
        async with apollo(apollo_fake, clock) as source:
            with pytest.raises(ProviderUnavailable, match=f"HTTP {status}") as caught:
                await source.find(contact("tim@acme.com"))
    assert caught.value.provider == "apollo"
    [refusal] = [entry for entry in logs if entry["event"] == "enrichment_provider_refused"]
    assert refusal["message"] == apollo_fake.error(status)["error"]
    assert APOLLO_KEY not in json.dumps(logs)


async def test_apollo_wrong_key_is_refused_by_the_fake(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    async with apollo(apollo_fake, clock, api_key="nope") as source:
        with pytest.raises(ProviderUnavailable, match="HTTP 401"):
            await source.find(contact("tim@acme.com"))


async def test_apollo_too_many_requests_waits_then_finds(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    apollo_fake.script("tim@acme.com", Answer(429, {"Retry-After": "2"}))
    async with apollo(apollo_fake, clock) as source:
        found = await source.find(contact("tim@acme.com"))
    assert found is not None and found.record_id == "apollo:587cf802f65125cad923a266"
    assert clock.sleeps == [2.0]


async def test_apollo_too_many_requests_without_retry_after_backs_off(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    apollo_fake.script("tim@acme.com", Answer(429), Answer(429))
    async with apollo(apollo_fake, clock) as source:
        assert await source.find(contact("tim@acme.com")) is not None
    assert clock.sleeps == [0.5, 1.0]


async def test_apollo_server_errors_are_retried_then_given_up(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    apollo_fake.script("tim@acme.com", Answer(500), Answer(503), Answer(504))
    async with apollo(apollo_fake, clock) as source:
        assert await source.find(contact("tim@acme.com")) is None
    assert apollo_fake.requests_for("tim@acme.com") == 3
    assert clock.sleeps == [0.5, 1.0]


async def test_apollo_rejected_request_is_none_without_retries(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    apollo_fake.script("tim@acme.com", Answer(422))
    with capture_logs() as logs:
        async with apollo(apollo_fake, clock) as source:
            assert await source.find(contact("tim@acme.com")) is None
    assert apollo_fake.requests_for("tim@acme.com") == 1
    assert [(entry["event"], entry["message"]) for entry in logs] == [
        ("apollo_match_rejected", "Scripted 422")
    ]


async def test_apollo_slow_answer_times_out_and_is_retried(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    apollo_fake.script("tim@acme.com", HOLD)
    async with apollo(apollo_fake, clock, timeout=0.2) as source:
        assert await source.find(contact("tim@acme.com")) is not None
    assert apollo_fake.requests_for("tim@acme.com") == 2
    assert clock.sleeps == [0.5]


async def test_apollo_unreadable_answer_is_none(apollo_fake: FakeApollo, clock: FakeClock) -> None:
    apollo_fake.script("tim@acme.com", Answer(200, body=b"[]"))
    async with apollo(apollo_fake, clock) as source:
        assert await source.find(contact("tim@acme.com")) is None


async def test_apollo_requests_are_paced_and_capped(
    apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    apollo_fake.gather = 2
    emails = [f"p{index}@acme.com" for index in range(4)]
    pace = {"rate_per_second": 2.0, "burst": 1.0, "max_in_flight": 2, "timeout": 5.0}
    async with apollo(apollo_fake, clock, **pace) as a:
        await asyncio.wait_for(asyncio.gather(*(a.find(contact(e)) for e in emails)), 30)
    assert len(apollo_fake.received) == 4
    assert apollo_fake.max_in_flight == 2
    # At 2 a second: each request after the first waits its 0.5 s turn.
    assert sum(clock.sleeps) == pytest.approx(1.5)


# --- shared ------------------------------------------------------------------------------------


def test_found_phones_are_e164_once_with_the_first_hint() -> None:
    phones, unusable = found_phones(
        [
            ("+1 (415) 555-0101", "mobile"),
            ("4155550101", "direct"),
            ("020 7946 0000", None),
            ("+1555", None),
            (None, "mobile"),
            (True, None),
            ("  ", None),
        ],
        region="GB",
    )
    assert phones == (FoundPhone("+14155550101", "mobile"), FoundPhone("+442079460000"))
    # "4155550101" read in GB is no number; the rest were never numbers.
    assert unusable == 2


async def test_the_waterfall_falls_through_pdl_to_apollo(
    pdl_fake: FakePDL, apollo_fake: FakeApollo, clock: FakeClock
) -> None:
    request = contact("tim@acme.com", firstName="Tim", lastName="Zheng")
    async with pdl(pdl_fake, clock) as first, apollo(apollo_fake, clock) as second:
        sources: list[EnrichmentSource] = [first, second]
        found = await run_waterfall(
            sources,
            replace(request, known=frozenset({"+14155550101"})),
        )
    assert found is not None
    assert found.source == "apollo"
    assert found.phones[0] == FoundPhone("+14155550102", "direct")
    assert len(pdl_fake.received) == len(apollo_fake.received) == 1


# --- configuration -----------------------------------------------------------------------------


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


@pytest.fixture
def no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for provider in ("PDL", "APOLLO"):
        for name in ("API_KEY", "BASE_URL", "RATE_PER_SECOND", "TIMEOUT", "MIN_LIKELIHOOD"):
            monkeypatch.delenv(f"DIALSCORE_{provider}_{name}", raising=False)
    monkeypatch.delenv("DIALSCORE_ENRICHMENT_MAX_IN_FLIGHT", raising=False)


@pytest.mark.usefixtures("no_provider_environment")
@pytest.mark.parametrize("blank", [None, "", "   "])
def test_no_keys_no_providers(blank: str | None) -> None:
    assert enrichment_providers_from_settings(settings(pdl_api_key=blank)) == {}


@pytest.mark.usefixtures("no_provider_environment")
async def test_keys_configure_both_providers(pdl_fake: FakePDL, apollo_fake: FakeApollo) -> None:
    configured = settings(
        pdl_api_key=PDL_KEY,
        pdl_base_url=pdl_fake.url + "/",
        pdl_min_likelihood=8,
        pdl_timeout=5.0,
        apollo_api_key=f" {APOLLO_KEY} ",
        apollo_base_url=apollo_fake.url,
        apollo_rate_per_second=50.0,
        enrichment_max_in_flight=2,
    )
    providers: dict[str, EnrichmentProvider] = enrichment_providers_from_settings(configured)
    try:
        assert sorted(providers) == ["apollo", "pdl"]
        assert {name: provider.name for name, provider in providers.items()} == {
            "apollo": "apollo",
            "pdl": "pdl",
        }
        pdl_found = await providers["pdl"].find(contact("sean@acme.com"))
        apollo_found = await providers["apollo"].find(contact("tim@acme.com"))
    finally:
        for provider in providers.values():
            await provider.close()
    assert pdl_found is not None and pdl_found.source == "pdl"
    assert apollo_found is not None and apollo_found.source == "apollo"
    assert pdl_fake.received[0].query["min_likelihood"] == ["8"]
    assert apollo_fake.received[0].headers["x-api-key"] == APOLLO_KEY


@pytest.mark.usefixtures("no_provider_environment")
async def test_settings_pace_each_provider() -> None:
    configured = settings(
        pdl_api_key=PDL_KEY,
        pdl_rate_per_second=4.0,
        pdl_timeout=3.0,
        apollo_api_key=APOLLO_KEY,
        apollo_rate_per_second=2.0,
        apollo_timeout=6.0,
        enrichment_max_in_flight=5,
    )
    providers = enrichment_providers_from_settings(configured)
    try:
        pdl_source, apollo_source = providers["pdl"], providers["apollo"]
        assert isinstance(pdl_source, PeopleDataLabs)
        assert isinstance(apollo_source, ApolloPeopleMatch)
        assert pdl_source.pacing == Pacing(max_in_flight=5, rate_per_second=4.0, timeout=3.0)
        assert apollo_source.pacing == Pacing(max_in_flight=5, rate_per_second=2.0, timeout=6.0)
    finally:
        for provider in providers.values():
            await provider.close()


@pytest.mark.usefixtures("no_provider_environment")
def test_one_key_configures_one_provider() -> None:
    providers = enrichment_providers_from_settings(settings(apollo_api_key=APOLLO_KEY))
    assert list(providers) == ["apollo"]
    assert isinstance(providers["apollo"], ApolloPeopleMatch)


@pytest.mark.usefixtures("no_provider_environment")
def test_settings_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALSCORE_PDL_API_KEY", PDL_KEY)
    monkeypatch.setenv("DIALSCORE_PDL_MIN_LIKELIHOOD", "7")
    monkeypatch.setenv("DIALSCORE_ENRICHMENT_MAX_IN_FLIGHT", "4")
    configured = settings()
    assert (configured.pdl_api_key, configured.pdl_min_likelihood) == (PDL_KEY, 7)
    assert configured.enrichment_max_in_flight == 4
    assert list(enrichment_providers_from_settings(configured)) == ["pdl"]


@pytest.mark.usefixtures("no_provider_environment")
@pytest.mark.parametrize(
    "values",
    [
        {"pdl_min_likelihood": 0},
        {"pdl_min_likelihood": 11},
        {"pdl_rate_per_second": 0},
        {"apollo_timeout": 0},
        {"enrichment_max_in_flight": 0},
    ],
)
def test_nonsense_provider_settings_are_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        settings(**values)


def test_every_registered_source_is_in_the_default_waterfall_in_order() -> None:
    """One registry names the sources (P203): the default DIALSCORE_ENRICHMENT_SOURCES lists
    each of them once, the client's own data before the paid providers."""
    from dialscore.enrichment.service import OWN_SOURCES, PROVIDERS, source_names

    assert source_names(settings()) == [*OWN_SOURCES, *PROVIDERS]
