"""Verification providers for core scoring: the Twilio Lookup v2 adapter against a
local fake of Lookup on 127.0.0.1 that serves Twilio's documented answers.

Waiting is done by an injected clock and sleep, so backoff, Retry-After and pacing are read
from the recorded waits instead of being sat through; only request timeouts take real time
(a fraction of a second each)."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import fields, replace
from typing import Any
from urllib.parse import unquote

import pytest
from structlog.testing import capture_logs

from dialscore.config import Settings
from dialscore.kit.paced_http import Pacing, TokenBucket
from dialscore.scoring import twilio as twilio_module
from dialscore.scoring.providers import (
    LINE_TYPES,
    ProviderUnavailable,
    Verification,
    VerificationProvider,
    providers_from_settings,
)
from dialscore.scoring.twilio import TWILIO_LINE_TYPES, TwilioLookup
from tests.fakes import Answer, Received, ScriptedService

SID = "AC" + "0123456789abcdef" * 2
TOKEN = "fake-auth-token"


def lookup_answer(
    number: str,
    line_type: str | None,
    carrier: str | None = None,
    *,
    mcc: str | None = None,
    mnc: str | None = None,
    error_code: int | None = None,
) -> dict[str, Any]:
    """A documented Lookup v2 answer with Fields=line_type_intelligence for a valid number."""
    return {
        "calling_country_code": "1",
        "country_code": "US",
        "phone_number": number,
        "national_format": f"({number[2:5]}) {number[5:8]}-{number[8:]}",
        "valid": True,
        "validation_errors": [],
        "caller_name": None,
        "sim_swap": None,
        "call_forwarding": None,
        "line_status": None,
        "line_type_intelligence": {
            "carrier_name": carrier,
            "error_code": error_code,
            "mobile_country_code": mcc,
            "mobile_network_code": mnc,
            "type": line_type,
        },
        "identity_match": None,
        "reassigned_number": None,
        "sms_pumping_risk": None,
        "phone_number_quality_score": None,
        "pre_fill": None,
        "url": f"https://lookups.twilio.com/v2/PhoneNumbers/{number}",
    }


def invalid_answer(number: str, error: str) -> dict[str, Any]:
    """Lookup's answer for a number that is not valid: no data package, a validation error."""
    return {
        "calling_country_code": None,
        "country_code": None,
        "phone_number": number,
        "national_format": None,
        "valid": False,
        "validation_errors": [error],
        "caller_name": None,
        "sim_swap": None,
        "call_forwarding": None,
        "line_status": None,
        "line_type_intelligence": None,
        "identity_match": None,
        "reassigned_number": None,
        "sms_pumping_risk": None,
        "phone_number_quality_score": None,
        "pre_fill": None,
        "url": f"https://lookups.twilio.com/v2/PhoneNumbers/{number}",
    }


def twilio_error(status: int, code: int, message: str) -> dict[str, Any]:
    return {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }


# Twilio type → (number, carrier, our type). Carriers only where Twilio documents them.
TYPED_LINES: dict[str, tuple[str, str | None, str]] = {
    "mobile": ("+14155550101", "T-Mobile USA, Inc.", "mobile"),
    "landline": ("+14155550102", "AT&T", "landline"),
    "fixedVoip": ("+14155550103", "Comcast", "voip"),
    "nonFixedVoip": ("+14155550104", "Bandwidth/13 - Bandwidth.com - SVR", "voip"),
    "personal": ("+14155550105", None, "personal"),
    "tollFree": ("+18005550106", None, "toll_free"),
    "premium": ("+19005550107", None, "premium"),
    "sharedCost": ("+14155550108", None, "shared_cost"),
    "uan": ("+14155550109", None, "uan"),
    "voicemail": ("+14155550110", None, "voicemail"),
    "pager": ("+14155550111", None, "pager"),
    "unknown": ("+14155550112", None, "unknown"),
}
INVALID = "+1415555"
CANADIAN = "+16135550113"
UNLISTED = "+14155550199"


def documented_lines() -> dict[str, dict[str, Any]]:
    lines = {
        number: lookup_answer(number, twilio_type, carrier)
        for twilio_type, (number, carrier, _) in TYPED_LINES.items()
    }
    lines[INVALID] = invalid_answer(INVALID, "TOO_SHORT")
    # Documented: a Canadian number without NPAC access answers error 60601 and no type.
    lines[CANADIAN] = lookup_answer(CANADIAN, None, error_code=60601)
    return lines


def many_lines(count: int) -> dict[str, dict[str, Any]]:
    numbers = [f"+1212555{index:04d}" for index in range(count)]
    return {number: lookup_answer(number, "mobile", "Verizon Wireless") for number in numbers}


# A scripted answer that comes only when the fake stops (or after this long): the client times
# out first.
HOLD = Answer(delay=5.0)


class FakeTwilio(ScriptedService):
    """Lookup v2 on 127.0.0.1: checks Basic auth and Fields like Twilio, answers from ``lines``
    (404 for the rest) unless a number has scripted answers left."""

    PREFIX = "/v2/PhoneNumbers/"

    def __init__(self, lines: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self.lines = lines

    def authorized(self, request: Received) -> bool:
        expected = "Basic " + base64.b64encode(f"{SID}:{TOKEN}".encode()).decode()
        return request.headers.get("authorization") == expected

    def who(self, request: Received) -> str:
        """The number a request asks about."""
        return unquote(request.path.removeprefix(self.PREFIX))

    def error(self, status: int) -> dict[str, Any]:
        if status == 401:
            return twilio_error(401, 20003, "Authenticate")
        return twilio_error(status, 20500, "Scripted error")

    def answer(self, request: Received) -> tuple[int, dict[str, Any]]:
        if request.method != "GET" or not request.path.startswith(self.PREFIX):
            return 404, twilio_error(404, 20404, "Not found")
        if request.query.get("Fields") != ["line_type_intelligence"]:
            return 400, twilio_error(400, 60200, "Invalid parameter: Fields")
        number = self.who(request)
        answer = self.lines.get(number)
        if answer is None:
            message = f"The requested resource /PhoneNumbers/{number} was not found"
            return 404, twilio_error(404, 20404, message)
        return 200, answer


class FakeClock:
    """Monotonic time that moves only when someone sleeps; every sleep is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def fake() -> Iterator[FakeTwilio]:
    with FakeTwilio(documented_lines()) as server:
        yield server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


PACING_FIELDS = frozenset(field.name for field in fields(Pacing))


def pacing_on(clock: FakeClock, default: Pacing, options: dict[str, Any]) -> Pacing:
    """An adapter's pacing on the fake clock; the pacing fields of ``options`` taken out."""
    chosen = {name: options.pop(name) for name in PACING_FIELDS & set(options)}
    return replace(
        default,
        **{
            "burst": 1000.0,  # pacing has its own tests; elsewhere it would only add waits
            # Generous, so that a loaded machine (answers held up for seconds have been seen)
            # does not turn an answer into a retry; the tests of slow answers set their own.
            "timeout": 30.0,
            "clock": clock,
            "sleep": clock.sleep,
            **chosen,
        },
    )


@asynccontextmanager
async def twilio(fake: FakeTwilio, clock: FakeClock, **options: Any) -> AsyncIterator[TwilioLookup]:
    pacing = pacing_on(clock, twilio_module.DEFAULT_PACING, options)
    token = options.pop("auth_token", TOKEN)
    options.setdefault("base_url", fake.url)
    lookup = TwilioLookup(SID, token, pacing=pacing, **options)
    try:
        yield lookup
    finally:
        await lookup.close()


# --- answers ------------------------------------------------------------------------------


def test_every_documented_twilio_type_has_a_place_in_our_vocabulary() -> None:
    assert set(TWILIO_LINE_TYPES) == set(TYPED_LINES)
    assert set(TWILIO_LINE_TYPES.values()) <= LINE_TYPES


async def test_each_line_type_is_mapped_with_its_carrier(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    numbers = [number for number, _, _ in TYPED_LINES.values()]
    async with twilio(fake, clock) as lookup:
        found = await lookup.verify(numbers)

    assert found == {
        number: Verification("twilio", ours, carrier)
        for number, carrier, ours in TYPED_LINES.values()
    }
    expected_auth = "Basic " + base64.b64encode(f"{SID}:{TOKEN}".encode()).decode()
    assert len(fake.received) == len(numbers)
    for seen in fake.received:
        assert seen.path == "/v2/PhoneNumbers/%2B" + fake.who(seen)[1:]
        assert seen.query == {"Fields": ["line_type_intelligence"]}
        assert seen.headers["authorization"] == expected_auth


async def test_an_invalid_number_is_verified_as_invalid(fake: FakeTwilio, clock: FakeClock) -> None:
    async with twilio(fake, clock) as lookup:
        found = await lookup.verify([INVALID])
    assert found == {INVALID: Verification("twilio", "unknown", None, valid=False)}


async def test_a_number_lookup_does_not_know_is_absent_without_retries(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    mobile = TYPED_LINES["mobile"][0]
    async with twilio(fake, clock) as lookup:
        found = await lookup.verify([UNLISTED, mobile])
    assert set(found) == {mobile}
    assert fake.requests_for(UNLISTED) == 1
    assert clock.sleeps == []


async def test_a_line_type_error_code_leaves_the_number_absent(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    with capture_logs() as logs:
        async with twilio(fake, clock) as lookup:
            found = await lookup.verify([CANADIAN])
    assert found == {}
    assert [entry.get("error_code") for entry in logs] == [60601]


async def test_a_type_twilio_adds_later_is_unknown_and_logged(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    fake.lines[UNLISTED] = lookup_answer(UNLISTED, "satellite", "Orbit Co")
    with capture_logs() as logs:
        async with twilio(fake, clock) as lookup:
            found = await lookup.verify([UNLISTED])
    assert found == {UNLISTED: Verification("twilio", "unknown", "Orbit Co")}
    assert [(entry["event"], entry["type"]) for entry in logs] == [
        ("twilio_lookup_unknown_type", "satellite")
    ]


async def test_numbers_that_are_not_e164_are_skipped_and_repeats_asked_once(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    mobile = TYPED_LINES["mobile"][0]
    async with twilio(fake, clock) as lookup:
        found = await lookup.verify(["4155550101", "+0155", "", mobile, mobile])
    assert set(found) == {mobile}
    assert [fake.who(seen) for seen in fake.received] == [mobile]


async def test_an_unreadable_answer_leaves_only_that_number_absent(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    mobile, landline = TYPED_LINES["mobile"][0], TYPED_LINES["landline"][0]
    fake.script(mobile, Answer(200, body=b"<html>oops</html>"))
    async with twilio(fake, clock) as lookup:
        found = await lookup.verify([mobile, landline])
    assert set(found) == {landline}


async def test_a_rejected_request_is_not_retried(fake: FakeTwilio, clock: FakeClock) -> None:
    mobile = TYPED_LINES["mobile"][0]
    fake.script(mobile, Answer(400))
    async with twilio(fake, clock) as lookup:
        assert await lookup.verify([mobile]) == {}
    assert fake.requests_for(mobile) == 1


# --- retries ------------------------------------------------------------------------------


async def test_server_errors_are_retried_with_backoff(fake: FakeTwilio, clock: FakeClock) -> None:
    mobile = TYPED_LINES["mobile"][0]
    fake.script(mobile, Answer(500), Answer(503))
    async with twilio(fake, clock) as lookup:
        found = await lookup.verify([mobile])
    assert found == {mobile: Verification("twilio", "mobile", "T-Mobile USA, Inc.")}
    assert fake.requests_for(mobile) == 3
    assert clock.sleeps == [0.5, 1.0]


async def test_too_many_requests_waits_as_long_as_retry_after_says(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    mobile = TYPED_LINES["mobile"][0]
    fake.script(mobile, Answer(429, {"Retry-After": "3"}))
    async with twilio(fake, clock) as lookup:
        found = await lookup.verify([mobile])
    assert set(found) == {mobile}
    # The retry itself then finds the bucket free again: the hold had passed.
    assert clock.sleeps == [3.0]


async def test_retry_after_is_capped(fake: FakeTwilio, clock: FakeClock) -> None:
    mobile = TYPED_LINES["mobile"][0]
    fake.script(mobile, Answer(429, {"Retry-After": "3600"}))
    async with twilio(fake, clock, max_retry_after=20.0) as lookup:
        found = await lookup.verify([mobile])
    assert set(found) == {mobile}
    assert clock.sleeps == [20.0]


async def test_retry_after_holds_every_request_of_the_provider(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    mobile, landline = TYPED_LINES["mobile"][0], TYPED_LINES["landline"][0]
    fake.script(mobile, Answer(429, {"Retry-After": "4"}))
    async with twilio(fake, clock, burst=1.0, rate_per_second=10.0, max_retries=0) as lookup:
        assert await lookup.verify([mobile]) == {}
        assert clock.sleeps == []
        found = await lookup.verify([landline])
    assert set(found) == {landline}
    assert clock.sleeps == [pytest.approx(4.0)]


async def test_giving_up_after_retries_leaves_the_number_absent(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    mobile, landline = TYPED_LINES["mobile"][0], TYPED_LINES["landline"][0]
    fake.script(mobile, Answer(500), Answer(502), Answer(503), Answer(500))
    with capture_logs() as logs:
        async with twilio(fake, clock) as lookup:
            found = await lookup.verify([mobile, landline])
    assert set(found) == {landline}
    assert fake.requests_for(mobile) == 3
    gave_up = [entry for entry in logs if entry["event"] == "twilio_lookup_gave_up"]
    assert [(entry["attempts"], entry["problem"]) for entry in gave_up] == [(3, "HTTP 503")]
    assert mobile not in json.dumps(logs)  # numbers are masked in logs


async def test_a_slow_answer_times_out_and_is_retried(fake: FakeTwilio, clock: FakeClock) -> None:
    mobile = TYPED_LINES["mobile"][0]
    fake.script(mobile, HOLD)
    async with twilio(fake, clock, timeout=0.2) as lookup:
        found = await lookup.verify([mobile])
    assert set(found) == {mobile}
    assert fake.requests_for(mobile) == 2
    assert clock.sleeps == [0.5]


async def test_answers_that_never_come_leave_the_number_absent(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    mobile = TYPED_LINES["mobile"][0]
    fake.script(mobile, HOLD, HOLD)
    async with twilio(fake, clock, timeout=0.2, max_retries=1) as lookup:
        assert await lookup.verify([mobile]) == {}
    assert fake.requests_for(mobile) == 2


# --- the provider as a whole ----------------------------------------------------------------


async def test_refused_credentials_make_the_provider_unavailable_logged_once(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    fake.lines.update(many_lines(30))
    numbers = list(many_lines(30))
    with capture_logs() as logs:
        async with twilio(fake, clock, auth_token="wrong") as lookup:
            for _ in range(2):
                with pytest.raises(ProviderUnavailable) as caught:
                    await lookup.verify(numbers)
                assert caught.value.provider == "twilio"
                assert "HTTP 401" in str(caught.value)
    refusals = [entry for entry in logs if entry["event"] == "twilio_lookup_refused"]
    assert [(entry["status"], entry["code"]) for entry in refusals] == [(401, 20003)]
    # The first refusal stops the batch; credentials are not tried once per number.
    assert len(fake.received) < 2 * len(numbers)
    assert clock.sleeps == []
    assert "wrong" not in json.dumps(logs)


async def test_forbidden_makes_the_provider_unavailable(fake: FakeTwilio, clock: FakeClock) -> None:
    mobile = TYPED_LINES["mobile"][0]
    fake.script(mobile, Answer(403))
    async with twilio(fake, clock) as lookup:
        with pytest.raises(ProviderUnavailable, match="HTTP 403"):
            await lookup.verify([mobile])


async def test_a_service_that_cannot_be_reached_is_unavailable(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    async with twilio(fake, clock, base_url=f"http://127.0.0.1:{closed_port}") as lookup:
        with pytest.raises(ProviderUnavailable, match="cannot connect"):
            await lookup.verify([TYPED_LINES["mobile"][0]])
    assert clock.sleeps == [0.5, 1.0]


async def test_requests_in_flight_are_capped_across_calls(
    fake: FakeTwilio, clock: FakeClock
) -> None:
    lines = many_lines(24)
    fake.lines.update(lines)
    fake.gather = 3
    numbers = list(lines)
    async with twilio(fake, clock, max_in_flight=3, timeout=5.0) as lookup:
        first, second = await asyncio.wait_for(
            asyncio.gather(lookup.verify(numbers[:12]), lookup.verify(numbers[12:])), 30
        )
    assert set(first) | set(second) == set(numbers)
    assert fake.max_in_flight == 3


async def test_requests_are_paced_by_the_rate_limit(fake: FakeTwilio, clock: FakeClock) -> None:
    lines = many_lines(5)
    fake.lines.update(lines)
    start = clock.now
    async with twilio(fake, clock, rate_per_second=10.0, burst=1.0, max_in_flight=5) as lookup:
        found = await lookup.verify(list(lines))
    assert set(found) == set(lines)
    # Five at once, at 10 a second: the first goes now, each other one 0.1 s after the last.
    assert clock.sleeps == pytest.approx([0.1] * 4)
    assert clock.now - start == pytest.approx(0.4)


# --- the token bucket -------------------------------------------------------------------------


def test_token_bucket_spaces_requests_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10.0, clock=clock, sleep=clock.sleep)
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.1, 0.2, 0.3])


def test_token_bucket_allows_a_burst_then_refills_up_to_its_capacity() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10.0, 3.0, clock=clock, sleep=clock.sleep)
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])
    clock.now += 0.25  # pays the debt and earns 1.5 tokens
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.05, 0.15])
    clock.now += 3600  # a long quiet spell earns no more than the capacity
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


async def test_token_bucket_acquire_sleeps_the_computed_wait() -> None:
    clock = FakeClock()
    bucket = TokenBucket(4.0, clock=clock, sleep=clock.sleep)
    waits = [await bucket.acquire() for _ in range(3)]
    assert waits == [0.0, 0.25, 0.25]
    assert clock.sleeps == [0.25, 0.25]


def test_token_bucket_hold_delays_the_next_token() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10.0, clock=clock, sleep=clock.sleep)
    bucket.hold(2.0)
    assert bucket.reserve() == pytest.approx(2.0)
    assert bucket.reserve() == pytest.approx(2.1)


async def test_a_cancelled_wait_gives_its_token_back() -> None:
    clock = FakeClock()
    never = asyncio.Event()

    async def blocked(seconds: float) -> None:
        await never.wait()

    bucket = TokenBucket(10.0, clock=clock, sleep=blocked)
    assert bucket.reserve() == 0.0
    waiting = asyncio.create_task(bucket.acquire())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert bucket.reserve() == pytest.approx(0.1)


@pytest.mark.parametrize(("rate", "capacity"), [(0.0, 1.0), (-1.0, 1.0), (10.0, 0.5)])
def test_token_bucket_refuses_nonsense(rate: float, capacity: float) -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate, capacity)


@pytest.mark.parametrize(
    "values",
    [
        {"max_in_flight": 0},
        {"rate_per_second": 0.0},
        {"burst": 0.5},
        {"timeout": 0.0},
        {"max_retries": -1},
    ],
)
def test_pacing_refuses_nonsense(values: dict[str, Any]) -> None:
    name = next(iter(values))
    with pytest.raises(ValueError, match=name):
        Pacing(**values)


# --- vocabulary and configuration -------------------------------------------------------------


def test_a_verification_speaks_only_our_vocabulary() -> None:
    with pytest.raises(ValueError, match="fixedVoip"):
        Verification("twilio", "fixedVoip")


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


@pytest.fixture
def no_twilio_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SID", "ACCOUNT_SID", "AUTH_TOKEN", "BASE_URL"):
        monkeypatch.delenv(f"DIALSCORE_TWILIO_{name}", raising=False)


@pytest.mark.usefixtures("no_twilio_environment")
def test_no_credentials_no_providers() -> None:
    assert providers_from_settings(settings()) == []


@pytest.mark.usefixtures("no_twilio_environment")
async def test_credentials_configure_twilio_lookup(fake: FakeTwilio) -> None:
    configured = settings(
        twilio_account_sid=SID,
        twilio_auth_token=TOKEN,
        twilio_base_url=fake.url + "/",
        twilio_max_in_flight=2,
    )
    providers: list[VerificationProvider] = providers_from_settings(configured)
    assert [provider.name for provider in providers] == ["twilio"]
    try:
        mobile, carrier, _ = TYPED_LINES["mobile"]
        found = await providers[0].verify([mobile])
        assert found == {mobile: Verification("twilio", "mobile", carrier)}
    finally:
        for provider in providers:
            await provider.close()


@pytest.mark.usefixtures("no_twilio_environment")
@pytest.mark.parametrize(
    ("values", "missing"),
    [
        ({"twilio_account_sid": SID}, "DIALSCORE_TWILIO_AUTH_TOKEN"),
        ({"twilio_auth_token": TOKEN}, "DIALSCORE_TWILIO_ACCOUNT_SID"),
    ],
)
def test_half_configured_twilio_is_refused(values: dict[str, str], missing: str) -> None:
    with pytest.raises(ValueError, match=missing):
        providers_from_settings(settings(**values))


@pytest.mark.usefixtures("no_twilio_environment")
async def test_settings_pace_twilio_lookup() -> None:
    configured = settings(
        twilio_account_sid=SID,
        twilio_auth_token=TOKEN,
        twilio_max_in_flight=3,
        twilio_rate_per_second=7.0,
        twilio_timeout=2.5,
    )
    [provider] = providers_from_settings(configured)
    try:
        assert isinstance(provider, TwilioLookup)
        assert provider.pacing == Pacing(max_in_flight=3, rate_per_second=7.0, timeout=2.5)
    finally:
        await provider.close()
