"""Request rate limits over HTTP (D25, D26): the nine X-RateLimit headers on every /api answer
(2xx, 4xx, 429, 500), one count per call, exact admission under concurrency in memory and in
Redis, anonymous callers counted per address, GET /api/public/quota, and limit changes that
apply to the next request, on both databases.

Windows are aligned to the clock, so no assertion assumes where the next second, minute or
midnight falls: calls are compared only with calls of the same window (equal reset header),
and a call in a new window is checked against a fresh window instead."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis.asyncio
from fastapi import FastAPI

from dialscore.accounts import service as accounts
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit.db import Database
from dialscore.models import Plan
from tests.conftest import SECRET
from tests.processes import REDIS_URL, redis_namespace
from tests.support import V2, Tenant, assert_error, make_tenant, plan_tiers, state_of

CREDITS = f"{V2}/account/credits"
QUOTA = "/api/public/quota"
TIER_NAMES = ("second", "minute", "day")
SPAN = {"second": 1, "minute": 60, "day": 86_400}
HEADER_PARTS = ("Limit", "Remaining", "Reset")

Tiers = dict[str, int | None]

# Distinct values per use, so a header showing the wrong identity's limits is caught.
CLIENT_TIERS: Tiers = {"per_second": 500, "per_minute": 5_000, "per_day": 50_000}
FREE_KEY_TIERS: Tiers = {"per_second": 300, "per_minute": 3_000, "per_day": 30_000}
ANON_TIERS: Tiers = {"per_second": 400, "per_minute": 4_000, "per_day": 40_000}


def limits_of(tiers: Tiers) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in TIER_NAMES:
        value = tiers[f"per_{name}"]
        assert value is not None
        out[name] = value
    return out


CLIENT = limits_of(CLIENT_TIERS)
FREE_KEY = limits_of(FREE_KEY_TIERS)
ANON = limits_of(ANON_TIERS)


# -- reading the headers ----------------------------------------------------------------------


@dataclass(frozen=True)
class TierHeaders:
    limit: int
    remaining: int
    reset: int


@dataclass(frozen=True)
class Timed:
    """A response and the wall clock (ns) just before the request and just after it."""

    response: httpx.Response
    before: int
    after: int


def rate(response: httpx.Response) -> dict[str, TierHeaders]:
    """The nine headers, each present once as a non-negative integer."""
    tiers: dict[str, TierHeaders] = {}
    for name in TIER_NAMES:
        values = []
        for part in HEADER_PARTS:
            header = f"X-RateLimit-{part}-{name.capitalize()}"
            found = response.headers.get_list(header)
            assert len(found) == 1, (header, response.status_code, dict(response.headers))
            assert found[0].isdigit(), (header, found[0])
            values.append(int(found[0]))
        tiers[name] = TierHeaders(*values)
    return tiers


def next_boundary(ns: int, name: str) -> int:
    """The Unix second at which the window of ``name`` holding ``ns`` ends."""
    return (ns // 1_000_000_000 // SPAN[name] + 1) * SPAN[name]


def assert_rate(
    response: httpx.Response, limits: dict[str, int], before: int, after: int
) -> dict[str, TierHeaders]:
    """The headers carry ``limits``, a remaining within them, and the reset of a window that
    held some instant between ``before`` and ``after``."""
    tiers = rate(response)
    for name in TIER_NAMES:
        tier = tiers[name]
        assert tier.limit == limits[name], (name, tier, response.status_code)
        assert 0 <= tier.remaining <= tier.limit, (name, tier)
        low, high = next_boundary(before, name), next_boundary(after, name)
        assert low <= tier.reset <= high, (name, tier.reset, low, high)
    return tiers


def assert_fresh(tiers: dict[str, TierHeaders], used: int = 1) -> None:
    """Every tier counts exactly ``used`` calls (the identity's first calls)."""
    for name in TIER_NAMES:
        assert tiers[name].remaining == tiers[name].limit - used, (name, tiers[name])


def assert_too_many(response: httpx.Response, tier: str, before: int, after: int) -> float:
    """A D26 429 naming ``tier``; returns retryAfter."""
    assert response.status_code == 429, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "message", "tier", "retryAfter"}, body
    assert isinstance(body["error"], str) and body["error"].strip()
    assert isinstance(body["message"], str) and body["message"].strip()
    assert body["tier"] == tier, body
    retry = body["retryAfter"]
    assert isinstance(retry, int | float) and not isinstance(retry, bool), body
    assert 0 < retry <= SPAN[tier], body
    assert response.headers.get_list("Retry-After") == [str(math.ceil(retry))], body
    headers = rate(response)
    assert headers[tier].remaining == 0
    # retryAfter counts down to the named tier's reset from the moment of the request.
    assert before / 1e9 - 0.002 <= headers[tier].reset - retry <= after / 1e9 + 0.002, body
    return float(retry)


def assert_no_rate_headers(response: httpx.Response) -> None:
    names = [name for name in response.headers if name.lower().startswith("x-ratelimit")]
    assert names == [], names
    assert "retry-after" not in response.headers


# -- making requests --------------------------------------------------------------------------


async def timed_get(
    client: httpx.AsyncClient, path: str, headers: dict[str, str] | None = None
) -> Timed:
    before = time.time_ns()
    response = await client.get(path, headers=headers)
    return Timed(response, before, time.time_ns())


@asynccontextmanager
async def client_of(
    app: FastAPI, address: str = "127.0.0.1", *, raise_app_exceptions: bool = True
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of ``app`` whose requests come from ``address``."""
    transport = httpx.ASGITransport(
        app=app, client=(address, 4321), raise_app_exceptions=raise_app_exceptions
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


async def burst(
    calls: Iterable[tuple[httpx.AsyncClient, Tenant]],
) -> tuple[list[tuple[Tenant, httpx.Response]], int, int]:
    """All the calls at once (GET credits); the answers with their tenants, and the clock
    before the first and after the last."""
    pairs = list(calls)
    before = time.time_ns()
    responses = await asyncio.gather(*(c.get(CREDITS, headers=t.headers) for c, t in pairs))
    after = time.time_ns()
    return [(t, r) for (_, t), r in zip(pairs, responses, strict=True)], before, after


def assert_exact_admission(
    responses: list[httpx.Response], limits: dict[str, int], before: int, after: int
) -> None:
    """The answers of one client's burst, its first calls: per second window exactly
    min(limit, calls) were admitted, the rest are second-tier 429s, and every call (429s
    too) was counted exactly once in the minute and day tiers."""
    assert {r.status_code for r in responses} <= {200, 429}, [r.text for r in responses]
    headers = [assert_rate(r, limits, before, after) for r in responses]
    per_second = Counter(h["second"].reset for h in headers)
    admitted = Counter(
        h["second"].reset for h, r in zip(headers, responses, strict=True) if r.is_success
    )
    for window, total in per_second.items():
        assert admitted[window] == min(limits["second"], total), (window, total, admitted)
        remaining = sorted(
            h["second"].remaining
            for h, r in zip(headers, responses, strict=True)
            if r.is_success and h["second"].reset == window
        )
        # The admitted calls of a window were counted 1, 2, ... limit: one each.
        assert remaining == list(range(limits["second"] - admitted[window], limits["second"]))
    assert sum(per_second.values()) > sum(admitted.values()), "no call was refused"
    for response in responses:
        if response.status_code == 429:
            assert_too_many(response, "second", before, after)
            assert response.headers["Retry-After"] == "1"
    for name in ("minute", "day"):  # roomy tiers: each call has a count of its own
        windows = Counter(h[name].reset for h in headers)
        for window, total in windows.items():
            seen = sorted(h[name].remaining for h in headers if h[name].reset == window)
            assert seen == list(range(limits[name] - total, limits[name])), (name, seen)


# -- 1. the headers on every kind of answer ---------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    path: str
    # "client", "free" (a free-plan key), "none", "bad" (a made-up bearer token)
    caller: str


CASES = [
    Case("2xx", 200, CREDITS, "client"),
    Case("400-validation", 400, f"{V2}/jobs?limit=0", "client"),
    Case("401-no-key", 401, CREDITS, "none"),
    Case("401-bad-key", 401, CREDITS, "bad"),
    Case("401-malformed-header", 401, CREDITS, "basic"),
    Case("403-free-plan", 403, CREDITS, "free"),
    Case("404-unknown-job", 404, f"{V2}/jobs/{uuid.uuid4()}", "client"),
    Case("404-unknown-path", 404, f"{V2}/no-such-endpoint", "client"),
    Case("404-unknown-path-anonymous", 404, "/api/nothing/here", "none"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_headers_on_every_kind_of_answer(
    api: httpx.AsyncClient, db: Database, case: Case
) -> None:
    client = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    free = await make_tenant(db, SECRET, plan="free", tiers=FREE_KEY_TIERS, name="Freebie")
    headers, limits = {
        "client": (client.headers, CLIENT),
        "free": (free.headers, FREE_KEY),
        "none": (None, ANON),
        "bad": ({"Authorization": "Bearer not-a-real-key"}, ANON),
        "basic": ({"Authorization": "Basic dXNlcjpwYXNz"}, ANON),
    }[case.caller]
    async with plan_tiers(db, "free", ANON_TIERS):
        first = await timed_get(api, case.path, headers)
        second = await timed_get(api, case.path, headers)

    for call in (first, second):
        if case.status == 200:
            assert call.response.status_code == 200, call.response.text
            assert set(call.response.json()) == {"data"}
        else:
            assert_error(call.response, case.status)
        assert "retry-after" not in call.response.headers
    tiers = assert_rate(first.response, limits, first.before, first.after)
    assert_fresh(tiers)  # the first call of this caller in this app
    later = assert_rate(second.response, limits, second.before, second.after)
    for name in TIER_NAMES:  # the answer, whatever its status, was counted
        if later[name].reset == tiers[name].reset:
            assert later[name].remaining == tiers[name].remaining - 1, name
        else:
            assert later[name].remaining == limits[name] - 1, name


async def test_headers_on_a_429(api: httpx.AsyncClient, db: Database) -> None:
    tiers: Tiers = {"per_second": 500, "per_minute": 2, "per_day": 700}
    tenant = await make_tenant(db, SECRET, tiers=tiers)
    # Five calls hold at most one minute boundary, so one window sees at least three.
    calls = [await timed_get(api, CREDITS, tenant.headers) for _ in range(5)]
    refused = [c for c in calls if c.response.status_code == 429]
    assert refused, [c.response.status_code for c in calls]
    for call in refused:
        headers = assert_rate(call.response, limits_of(tiers), call.before, call.after)
        assert headers["minute"].remaining == 0
        assert_too_many(call.response, "minute", call.before, call.after)


@pytest.fixture
async def boom_app(settings: Settings) -> AsyncIterator[FastAPI]:
    """The real app plus a route under /api that fails with an unhandled exception."""
    application = create_app(settings, run_worker=False)

    @application.get("/api/test/boom")
    async def boom() -> None:
        raise RuntimeError("boom")

    async with application.router.lifespan_context(application):
        yield application


async def test_headers_on_a_500(boom_app: FastAPI) -> None:
    db = state_of(boom_app).db
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    async with (
        plan_tiers(db, "free", ANON_TIERS),
        client_of(boom_app, raise_app_exceptions=False) as client,
    ):
        calls = [await timed_get(client, "/api/test/boom", tenant.headers) for _ in range(2)]
        anonymous = await timed_get(client, "/api/test/boom")
        healthy = await client.get(CREDITS, headers=tenant.headers)

    for call in [*calls, anonymous]:
        assert_error(call.response, 500)
    first = assert_rate(calls[0].response, CLIENT, calls[0].before, calls[0].after)
    assert_fresh(first)
    second = assert_rate(calls[1].response, CLIENT, calls[1].before, calls[1].after)
    if second["day"].reset == first["day"].reset:  # a 500 consumes too (spec item 3)
        assert second["day"].remaining == first["day"].remaining - 1
    assert_fresh(assert_rate(anonymous.response, ANON, anonymous.before, anonymous.after))
    assert healthy.status_code == 200, healthy.text  # the app keeps serving


async def test_paths_outside_api_carry_no_rate_headers(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    for path in ("/healthz", "/readyz"):
        for headers in (None, tenant.headers):
            response = await api.get(path, headers=headers)
            assert response.status_code == 200, response.text
            assert_no_rate_headers(response)
    # ... and they do not count: the client's first /api call still finds full tiers.
    call = await timed_get(api, CREDITS, tenant.headers)
    assert call.response.status_code == 200
    assert_fresh(rate(call.response))


# -- 2. one call, one count -------------------------------------------------------------------


async def test_remaining_drops_by_exactly_one_per_call(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    # 2xx and 4xx alike: each consumes one from every tier.
    paths = [CREDITS, f"{V2}/jobs", f"{V2}/account/features", f"{V2}/jobs?limit=0"]
    paths.append(f"{V2}/jobs/{uuid.uuid4()}")
    previous: dict[str, TierHeaders] | None = None
    compared = Counter[str]()
    for index in range(15):
        call = await timed_get(api, paths[index % len(paths)], tenant.headers)
        assert call.response.status_code in (200, 400, 404), call.response.text
        tiers = assert_rate(call.response, CLIENT, call.before, call.after)
        if previous is None:
            assert_fresh(tiers)
        else:
            for name in TIER_NAMES:
                if tiers[name].reset == previous[name].reset:
                    assert tiers[name].remaining == previous[name].remaining - 1, (index, name)
                    compared[name] += 1
                else:  # the first call of a new window
                    assert tiers[name].reset > previous[name].reset
                    assert tiers[name].remaining == CLIENT[name] - 1, (index, name)
        previous = tiers
    # 14 consecutive pairs hold at most one minute boundary and one midnight.
    assert compared["minute"] >= 13 and compared["day"] >= 13, compared


# -- 3. 429 -----------------------------------------------------------------------------------


async def test_concurrent_calls_admit_exactly_the_second_limit(
    api: httpx.AsyncClient, db: Database
) -> None:
    tiers: Tiers = {"per_second": 3, "per_minute": 1_000, "per_day": 100_000}
    tenant = await make_tenant(db, SECRET, tiers=tiers)
    answered, before, after = await burst((api, tenant) for _ in range(30))
    assert_exact_admission([r for _, r in answered], limits_of(tiers), before, after)


async def test_two_clients_hammered_together_keep_their_own_counts(
    api: httpx.AsyncClient, db: Database
) -> None:
    first_tiers: Tiers = {"per_second": 3, "per_minute": 1_000, "per_day": 100_000}
    second_tiers: Tiers = {"per_second": 4, "per_minute": 2_000, "per_day": 200_000}
    first = await make_tenant(db, SECRET, tiers=first_tiers, name="First")
    second = await make_tenant(db, SECRET, tiers=second_tiers, name="Second")
    answered, before, after = await burst((api, first if i % 2 else second) for i in range(50))
    for tenant, tiers in ((first, first_tiers), (second, second_tiers)):
        own = [r for t, r in answered if t is tenant]
        assert len(own) == 25
        assert_exact_admission(own, limits_of(tiers), before, after)


async def test_a_minute_429_counts_too(api: httpx.AsyncClient, db: Database) -> None:
    tiers: Tiers = {"per_second": 500, "per_minute": 2, "per_day": 1_000}
    tenant = await make_tenant(db, SECRET, tiers=tiers)
    # Seven calls hold at most one minute boundary: one window sees at least four.
    calls = [await timed_get(api, CREDITS, tenant.headers) for _ in range(7)]
    headers = [assert_rate(c.response, limits_of(tiers), c.before, c.after) for c in calls]
    in_window = Counter[int]()
    for call, tier in zip(calls, headers, strict=True):
        in_window[tier["minute"].reset] += 1
        if in_window[tier["minute"].reset] <= 2:
            assert call.response.status_code == 200, call.response.text
            assert tier["minute"].remaining == 2 - in_window[tier["minute"].reset]
        else:  # refused, and still refused: the 429s were counted as well (D25)
            retry = assert_too_many(call.response, "minute", call.before, call.after)
            assert 0 < retry <= 60
    assert any(c.response.status_code == 429 for c in calls)
    # Every call, 429s included, consumed one from the day tier.
    for index in range(1, len(headers)):
        if headers[index]["day"].reset == headers[index - 1]["day"].reset:
            assert headers[index]["day"].remaining == headers[index - 1]["day"].remaining - 1


async def test_the_longest_exceeded_tier_is_named(api: httpx.AsyncClient, db: Database) -> None:
    # A second window lies within its minute: whenever the second tier is over 1, so is the
    # minute tier, and the minute (whose wait clears both) must be named (D26).
    tiers: Tiers = {"per_second": 1, "per_minute": 1, "per_day": 1_000}
    tenant = await make_tenant(db, SECRET, tiers=tiers)
    answered, before, after = await burst((api, tenant) for _ in range(6))
    refused = [r for _, r in answered if r.status_code == 429]
    assert len(refused) >= 4, [r.status_code for _, r in answered]
    for response in refused:
        assert_too_many(response, "minute", before, after)


# -- 4. anonymous callers ---------------------------------------------------------------------


async def test_anonymous_calls_count_per_address(app: FastAPI, db: Database) -> None:
    anon_tiers: Tiers = {"per_second": 500, "per_minute": 2, "per_day": 900}
    anon = limits_of(anon_tiers)
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    async with (
        plan_tiers(db, "free", anon_tiers),
        client_of(app, "198.51.100.7") as here,
        client_of(app, "198.51.100.8") as there,
    ):
        calls: list[Timed] = []
        for _ in range(7):  # bounded: at most one minute boundary, so a 429 comes by the 7th
            call = await timed_get(here, CREDITS)
            calls.append(call)
            tiers = assert_rate(call.response, anon, call.before, call.after)
            assert tiers["day"].remaining == 900 - len(calls)
            if call.response.status_code == 429:
                break
            assert_error(call.response, 401)
        exhausted = calls[-1]
        assert_too_many(exhausted.response, "minute", exhausted.before, exhausted.after)

        # A key calling from the exhausted address counts against its client only.
        keyed = await timed_get(here, CREDITS, tenant.headers)
        assert keyed.response.status_code == 200, keyed.response.text
        assert_fresh(assert_rate(keyed.response, CLIENT, keyed.before, keyed.after))

        # Another address has counts of its own.
        elsewhere = await timed_get(there, CREDITS)
        assert_error(elsewhere.response, 401)
        assert_fresh(assert_rate(elsewhere.response, anon, elsewhere.before, elsewhere.after))

        # The exhausted address goes on counting where it was (the key's call not included).
        again = await timed_get(here, CREDITS)
    after = assert_rate(again.response, anon, again.before, again.after)
    assert after["day"].remaining == 900 - len(calls) - 1
    if after["minute"].reset == rate(exhausted.response)["minute"].reset:
        assert_too_many(again.response, "minute", again.before, again.after)
    else:
        assert_error(again.response, 401)
        assert after["minute"].remaining == 1


async def test_a_revoked_key_counts_against_the_address(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    async with db.unit_of_work() as session:
        spare = await accounts.create_key(session, user_id=tenant.user_id, secret=SECRET)
    spare_headers = {"Authorization": f"Bearer {spare.api_key}"}
    async with plan_tiers(db, "free", ANON_TIERS):
        live = await timed_get(api, CREDITS, tenant.headers)
        assert live.response.status_code == 200, live.response.text
        assert_fresh(assert_rate(live.response, CLIENT, live.before, live.after))

        async with db.unit_of_work() as session:
            await accounts.revoke_key(session, key_id=tenant.key_id)
        for used in range(1, 4):
            call = await timed_get(api, CREDITS, tenant.headers)
            assert "revoked" in assert_error(call.response, 401)
            tiers = assert_rate(call.response, ANON, call.before, call.after)
            assert tiers["day"].remaining == ANON["day"] - used

        quota = await api.get(QUOTA, headers=spare_headers)
        anonymous = await timed_get(api, CREDITS)
    assert quota.status_code == 200, quota.text
    # The client counted only the call made while the key was live.
    assert quota.json()["data"]["day"]["remaining"] == CLIENT["day"] - 1
    assert_error(anonymous.response, 401)
    tiers = assert_rate(anonymous.response, ANON, anonymous.before, anonymous.after)
    assert tiers["day"].remaining == ANON["day"] - 4


# -- 5. GET /api/public/quota -----------------------------------------------------------------


def quota_tiers(response: httpx.Response) -> dict[str, TierHeaders]:
    """The quota body, checked against the headers of the same answer."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data"}, body
    assert set(body["data"]) == set(TIER_NAMES), body
    tiers: dict[str, TierHeaders] = {}
    for name in TIER_NAMES:
        entry = body["data"][name]
        assert set(entry) == {"limit", "remaining", "reset"}, entry
        assert all(type(value) is int for value in entry.values()), entry
        tiers[name] = TierHeaders(entry["limit"], entry["remaining"], entry["reset"])
    assert tiers == rate(response), (tiers, rate(response))
    return tiers


async def test_quota_matches_the_headers_and_consumes_nothing(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    first = await timed_get(api, CREDITS, tenant.headers)
    counted = assert_rate(first.response, CLIENT, first.before, first.after)
    assert_fresh(counted)
    for _ in range(20):
        call = await timed_get(api, QUOTA, tenant.headers)
        tiers = quota_tiers(call.response)
        assert tiers == assert_rate(call.response, CLIENT, call.before, call.after)
        for name in TIER_NAMES:
            # Only the credits call counts: in its window one is used, in a later one none.
            used = 1 if tiers[name].reset == counted[name].reset else 0
            assert tiers[name].remaining == CLIENT[name] - used, (name, tiers[name])
    last = await timed_get(api, CREDITS, tenant.headers)
    tiers = assert_rate(last.response, CLIENT, last.before, last.after)
    if tiers["day"].reset == counted["day"].reset:
        assert tiers["day"].remaining == CLIENT["day"] - 2


async def test_quota_reflects_calls_to_other_endpoints(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    untouched = quota_tiers(await api.get(QUOTA, headers=tenant.headers))
    for name in TIER_NAMES:
        assert untouched[name].remaining == untouched[name].limit == CLIENT[name]
    for round_ in range(3):
        before = quota_tiers(await api.get(QUOTA, headers=tenant.headers))
        credits = await api.get(CREDITS, headers=tenant.headers)
        assert credits.status_code == 200
        counted = rate(credits)
        after = quota_tiers(await api.get(QUOTA, headers=tenant.headers))
        for name in TIER_NAMES:
            if after[name].reset == counted[name].reset:
                assert after[name].remaining == counted[name].remaining, (round_, name)
            if after[name].reset == before[name].reset:
                assert after[name].remaining == before[name].remaining - 1, (round_, name)
        if after["day"].reset == untouched["day"].reset:
            assert after["day"].remaining == CLIENT["day"] - 1 - round_


async def test_quota_needs_a_key_with_api_access_and_never_consumes(
    api: httpx.AsyncClient, db: Database
) -> None:
    free = await make_tenant(db, SECRET, plan="free", tiers=FREE_KEY_TIERS, name="Freebie")
    async with plan_tiers(db, "free", ANON_TIERS):
        anonymous = [await api.get(CREDITS)]
        for headers in (None, None, None, {"Authorization": "Bearer nope"}, None):
            response = await api.get(QUOTA, headers=headers)
            assert_error(response, 401)
            anonymous.append(response)
        anonymous.append(await api.get(CREDITS))
        keyed = [
            await api.get(QUOTA, headers=free.headers),
            await api.get(CREDITS, headers=free.headers),
            await api.get(QUOTA, headers=free.headers),
            await api.get(QUOTA, headers=free.headers),
        ]
    assert_error(anonymous[0], 401)
    assert_error(anonymous[-1], 401)
    days = [rate(r)["day"] for r in anonymous]
    assert all(day.limit == ANON["day"] for day in days)
    if days[0].reset == days[-1].reset:
        # Only the two credits calls consumed from the address.
        assert [d.remaining for d in days] == [ANON["day"] - 1] * 6 + [ANON["day"] - 2]
    for response in keyed:
        assert_error(response, 403)
    days = [rate(r)["day"] for r in keyed]
    assert all(day.limit == FREE_KEY["day"] for day in days)
    if days[0].reset == days[-1].reset:
        assert [d.remaining for d in days] == [FREE_KEY["day"]] + [FREE_KEY["day"] - 1] * 3


async def test_quota_answers_while_a_tier_is_used_up(api: httpx.AsyncClient, db: Database) -> None:
    tiers: Tiers = {"per_second": 500, "per_minute": 2, "per_day": 1_000}
    tenant = await make_tenant(db, SECRET, tiers=tiers)
    calls: list[Timed] = []
    for _ in range(7):  # at most one minute boundary: a 429 comes by the 7th call
        calls.append(await timed_get(api, CREDITS, tenant.headers))
        if calls[-1].response.status_code == 429:
            break
    assert calls[-1].response.status_code == 429
    exhausted = rate(calls[-1].response)
    call = await timed_get(api, QUOTA, tenant.headers)
    quota = quota_tiers(call.response)  # 200 {data}: the quota call itself exceeds nothing
    assert quota == assert_rate(call.response, limits_of(tiers), call.before, call.after)
    if quota["minute"].reset == exhausted["minute"].reset:
        assert quota["minute"].remaining == 0


# -- 6. limit changes -------------------------------------------------------------------------


async def test_a_limit_change_applies_to_the_next_request(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    first = await api.get(CREDITS, headers=tenant.headers)
    assert rate(first)["second"].limit == CLIENT["second"]

    async with db.unit_of_work() as session:
        await accounts.set_overrides(
            session, client_id=tenant.client_id, values={"per_second": 7, "per_minute": 4_321}
        )
    changed = await api.get(CREDITS, headers=tenant.headers)
    assert changed.status_code == 200, changed.text
    tiers = rate(changed)
    assert (tiers["second"].limit, tiers["minute"].limit) == (7, 4_321)
    assert tiers["day"].limit == CLIENT["day"]
    assert tiers["second"].remaining <= 7
    if tiers["minute"].reset == rate(first)["minute"].reset:
        assert tiers["minute"].remaining == 4_321 - 2  # the counts survive the change
    quota = quota_tiers(await api.get(QUOTA, headers=tenant.headers))
    assert (quota["second"].limit, quota["minute"].limit) == (7, 4_321)

    # Dropping the overrides falls back to the plan's tiers, and a plan change reaches the
    # client's next request as well.
    async with db.unit_of_work() as session:
        await accounts.set_overrides(
            session,
            client_id=tenant.client_id,
            values={"per_second": None, "per_minute": None, "per_day": None},
        )
        team = await session.get(Plan, "team")
        assert team is not None
        shipped = {"second": team.per_second, "minute": team.per_minute, "day": team.per_day}
    plain = rate(await api.get(CREDITS, headers=tenant.headers))
    assert {name: plain[name].limit for name in TIER_NAMES} == shipped
    plan_values: Tiers = {"per_second": 9, "per_minute": 99, "per_day": 999}
    async with plan_tiers(db, "team", plan_values):
        moved = rate(await api.get(CREDITS, headers=tenant.headers))
    assert {name: moved[name].limit for name in TIER_NAMES} == limits_of(plan_values)


async def test_lowering_a_limit_below_the_count_refuses_the_next_request(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(db, SECRET, tiers=CLIENT_TIERS)
    calls = [await timed_get(api, CREDITS, tenant.headers) for _ in range(3)]
    last = rate(calls[-1].response)
    used = CLIENT["day"] - last["day"].remaining
    async with db.unit_of_work() as session:
        await accounts.set_overrides(session, client_id=tenant.client_id, values={"per_day": used})
    call = await timed_get(api, CREDITS, tenant.headers)
    tiers = assert_rate(call.response, {**CLIENT, "day": used}, call.before, call.after)
    if tiers["day"].reset == last["day"].reset:
        retry = assert_too_many(call.response, "day", call.before, call.after)
        assert 0 < retry <= 86_400
    else:  # a new day began in between
        assert call.response.status_code == 200


# -- 7. the Redis store -----------------------------------------------------------------------


@pytest.fixture
async def redis_apps(settings: Settings) -> AsyncIterator[tuple[FastAPI, FastAPI, str]]:
    """Two apps (as two API processes would be) counting in one Redis namespace. Each Redis
    call may take a minute: the timeout runs on the event loop, and on a busy two-core machine
    a burst of sixty requests in one loop once kept a reply unread for over a quarter, over a
    second and over five seconds; the call timed out and that app counted alone (failing
    open). This test is about exact counting, not timeouts."""
    with redis_namespace() as namespace:
        shared = settings.model_copy(
            update={
                "redis_url": REDIS_URL,
                "redis_namespace": namespace,
                "rate_limit_redis_timeout": 60.0,
            }
        )
        first = create_app(shared, run_worker=False)
        second = create_app(shared, run_worker=False)
        async with (
            first.router.lifespan_context(first),
            second.router.lifespan_context(second),
        ):
            yield first, second, namespace


async def redis_keys(namespace: str) -> list[str]:
    client: Any = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        return [key.decode() async for key in client.scan_iter(match=f"{namespace}:*")]
    finally:
        await client.aclose()


async def test_redis_store_admits_exactly_the_limit_across_apps(
    redis_apps: tuple[FastAPI, FastAPI, str],
) -> None:
    first_app, second_app, namespace = redis_apps
    db = state_of(first_app).db
    first_tiers: Tiers = {"per_second": 3, "per_minute": 1_000, "per_day": 100_000}
    second_tiers: Tiers = {"per_second": 4, "per_minute": 2_000, "per_day": 200_000}
    first = await make_tenant(db, SECRET, tiers=first_tiers, name="First")
    second = await make_tenant(db, SECRET, tiers=second_tiers, name="Second")
    async with client_of(first_app) as one, client_of(second_app) as other:
        calls = [(one if i % 4 < 2 else other, first if i % 2 else second) for i in range(60)]
        answered, before, after = await burst(calls)

        for tenant, tiers in ((first, first_tiers), (second, second_tiers)):
            own = [r for t, r in answered if t is tenant]
            assert len(own) == 30
            # Two in-memory stores would each admit the limit: only a shared count is exact.
            assert_exact_admission(own, limits_of(tiers), before, after)

    keys = await redis_keys(namespace)
    for tenant in (first, second):
        assert any(tenant.client_id in key for key in keys), keys


async def test_redis_quota_sees_the_shared_counts_and_consumes_nothing(
    redis_apps: tuple[FastAPI, FastAPI, str],
) -> None:
    first_app, second_app, _ = redis_apps
    tenant = await make_tenant(state_of(first_app).db, SECRET, tiers=CLIENT_TIERS)
    async with client_of(first_app) as one, client_of(second_app) as other:
        counted = await timed_get(one, CREDITS, tenant.headers)
        assert counted.response.status_code == 200, counted.response.text
        day = assert_rate(counted.response, CLIENT, counted.before, counted.after)["day"]
        assert day.remaining == CLIENT["day"] - 1
        for client in (other, one, other, one, other):
            call = await timed_get(client, QUOTA, tenant.headers)
            quota = quota_tiers(call.response)
            assert quota == assert_rate(call.response, CLIENT, call.before, call.after)
            if quota["day"].reset == day.reset:
                assert quota["day"].remaining == CLIENT["day"] - 1
        last = await timed_get(other, CREDITS, tenant.headers)
    tiers = assert_rate(last.response, CLIENT, last.before, last.after)
    if tiers["day"].reset == day.reset:
        assert tiers["day"].remaining == CLIENT["day"] - 2


async def test_openapi_documents_quota_and_the_rate_headers(api: httpx.AsyncClient) -> None:
    document = (await api.get("/openapi.json")).json()
    quota = document["paths"]["/api/public/quota"]["get"]
    assert quota["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/QuotaResponse"
    )
    names = {f"X-RateLimit-{p}-{t}" for p in HEADER_PARTS for t in ("Second", "Minute", "Day")}
    assert set(document["components"]["headers"]) == names
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for code, response in operation["responses"].items():
                headers = set(response.get("headers", {}))
                if path.startswith("/api"):
                    assert names <= headers, (path, code)
                    # A 429 and the fail-closed limiter's 503 both say when to come back.
                    assert ("Retry-After" in headers) == (code in ("429", "503")), (path, code)
                else:
                    assert not headers & names, (path, code)
    assert "429" in document["paths"]["/api/public/v2/jobs"]["get"]["responses"]


@pytest.mark.parametrize("mode", ["fail-open", "fail-closed"])
async def test_an_unreachable_redis_answers_by_the_failure_mode(
    settings: Settings, mode: str
) -> None:
    unreachable = settings.model_copy(
        update={
            "redis_url": "redis://127.0.0.1:1/0",
            "rate_limit_failure_mode": mode,
            "rate_limit_redis_timeout": 0.5,
        }
    )
    application = create_app(unreachable, run_worker=False)
    async with application.router.lifespan_context(application):
        tenant = await make_tenant(state_of(application).db, SECRET, tiers=CLIENT_TIERS)
        async with client_of(application) as client:
            calls = [await timed_get(client, CREDITS, tenant.headers) for _ in range(2)]
    for call in calls:
        tiers = assert_rate(call.response, CLIENT, call.before, call.after)
        if mode == "fail-open":
            # Served, and still counted: in this process's memory.
            assert call.response.status_code == 200, call.response.text
        else:
            assert_error(call.response, 503)
            assert call.response.headers["Retry-After"] == "1"
            assert all(tier.remaining == 0 for tier in tiers.values())
    if mode == "fail-open":
        first, second = (rate(call.response) for call in calls)
        if second["day"].reset == first["day"].reset:
            assert second["day"].remaining == first["day"].remaining - 1
