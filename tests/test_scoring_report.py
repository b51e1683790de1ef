"""GET /account/scoring-report on both databases: numbers scored through the API, calls with
known outcomes reported through POST /calls before and after the scoring, and the figures read
back per tier and per band; since, other clients' calls, colleagues, errors (P110, P111)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from dialscore.accuracy import endpoints
from dialscore.accuracy.service import SINCE_MALFORMED
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.support import (
    V2,
    Tenant,
    add_user,
    assert_error,
    contact,
    make_tenant,
    settle,
    submit,
)

REPORT = f"{V2}/account/scoring-report"
# Four numbers the engine scores in the four tiers with no calls reported (docs/scoring.md):
# a UK mobile, a London fixed line, a UK personal number, a fictional US number.
MOBILE = "+447400918273"
FIXED = "+442079460958"
PERSONAL = "+447011123456"
FICTIONAL = "+14155550100"
# What is reported to each after the scoring: (connected, right_party, others).
PLAN = {MOBILE: (2, 1, 7), FIXED: (1, 0, 7), PERSONAL: (0, 0, 4), FICTIONAL: (0, 1, 1)}
# The 95 % Wilson interval of each plan's connects of calls (3/10, 1/8, 0/4, 1/2), worked out
# from Wilson's formula apart from the service.
INTERVALS = {
    (3, 10): (0.1078, 0.6032),
    (1, 8): (0.0224, 0.4709),
    (0, 4): (0.0, 0.4899),
    (1, 2): (0.0945, 0.9055),
}
RATE_HEADERS = ("X-RateLimit-Remaining-Second", "X-RateLimit-Remaining-Minute")


def stamp(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def tier(status: str) -> str:
    return "na" if status.startswith("na") else status.partition(" - ")[0]


async def score(app: FastAPI, api: httpx.AsyncClient, tenant: Tenant, *numbers: str) -> str:
    """Scores one contact carrying ``numbers`` and waits for its job; the job's id."""
    slots = {f"phone{i + 1}": number for i, number in enumerate(numbers[1:], start=1)}
    response = await submit(api, tenant, [contact("Ann", "Lee", numbers[0], **slots)])
    assert response.status_code == 200, response.text
    await settle(app)
    job_id: str = response.json()["data"]["jobId"]
    return job_id


async def entries(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> dict[str, Any]:
    """The job's phone entries by number, as the API shows them."""
    response = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert response.status_code == 200, response.text
    (scored,) = response.json()["data"]["contacts"]
    return {entry["number"]: entry for entry in scored["phones"]}


async def report_calls(api: httpx.AsyncClient, tenant: Tenant, calls: list[dict[str, Any]]) -> None:
    response = await api.post(f"{V2}/calls", json={"calls": calls}, headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["acceptedRecordCount"] == len(calls)


def planned_calls(number: str, at: datetime) -> list[dict[str, Any]]:
    connected, right_party, others = PLAN[number]
    outcomes = ["connected"] * connected + ["right_party"] * right_party
    outcomes += ["no_answer", "voicemail", "busy", "gatekeeper"] * others
    outcomes = outcomes[: connected + right_party + others]
    return [{"number": number, "outcome": o, "calledAt": stamp(at)} for o in outcomes]


async def read_report(api: httpx.AsyncClient, tenant: Tenant, **params: str) -> dict[str, Any]:
    response = await api.get(REPORT, params=params, headers=tenant.headers)
    assert response.status_code == 200, response.text
    for header in RATE_HEADERS:
        assert header in response.headers
    body = response.json()
    assert set(body) == {"data"}
    data: dict[str, Any] = body["data"]
    return data


def by_tier(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert [t["tier"] for t in data["tiers"]] == ["p1", "p2", "p3", "na"]
    return {t["tier"]: t for t in data["tiers"]}


def pairs_won(outcomes: list[tuple[float, bool]]) -> float:
    yes = [rate for rate, connected in outcomes if connected]
    no = [rate for rate, connected in outcomes if not connected]
    won = sum(1.0 if y > n else 0.5 if y == n else 0.0 for y in yes for n in no)
    return won / (len(yes) * len(no))


# -- what is counted -------------------------------------------------------------------------------


async def test_calls_after_the_scoring_are_counted_per_tier_and_band(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    start = utcnow()
    job_id = await score(app, api, tenant, MOBILE, FIXED, PERSONAL, FICTIONAL)
    scored = utcnow()
    phones = await entries(api, tenant, job_id)
    tiers = {number: tier(phones[number]["status"]) for number in PLAN}
    # The four numbers score in the four tiers (docs/scoring.md), one number each.
    assert sorted(tiers.values()) == ["na", "p1", "p2", "p3"], tiers
    rates = {number: phones[number]["connectRate"] or 0.0 for number in PLAN}

    # Calls after the scoring, some by a colleague (the client's calls all count) ...
    colleague = await add_user(db, SECRET, tenant, "colleague@acme.example")
    after = scored + timedelta(seconds=30)
    await report_calls(api, tenant, [c for n in (MOBILE, FIXED) for c in planned_calls(n, after)])
    await report_calls(
        api, colleague, [c for n in (PERSONAL, FICTIONAL) for c in planned_calls(n, after)]
    )
    # ... and calls that count nowhere: before the scoring, and another client's after it.
    before = start - timedelta(hours=1)
    await report_calls(
        api,
        tenant,
        [{"number": n, "outcome": "connected", "calledAt": stamp(before)} for n in PLAN],
    )
    stranger = await make_tenant(db, SECRET, name="Other")
    await report_calls(
        api,
        stranger,
        [{"number": n, "outcome": "connected", "calledAt": stamp(after)} for n in PLAN],
    )

    data = await read_report(api, tenant)
    assert (data["calls"], data["connects"]) == (24, 5)
    figures = by_tier(data)
    for number, (connected, right_party, others) in PLAN.items():
        connects, calls = connected + right_party, connected + right_party + others
        low, high = INTERVALS[(connects, calls)]
        assert figures[tiers[number]] == {
            "tier": tiers[number],
            "phones": 1,
            "calls": calls,
            "connects": connects,
            "predicted": rates[number],
            "observed": round(connects / calls, 4),
            "low": low,
            "high": high,
        }, number

    expected_bands: dict[int, list[tuple[float, bool]]] = {}
    outcomes: list[tuple[float, bool]] = []
    for number, (connected, right_party, others) in PLAN.items():
        made = [(rates[number], True)] * (connected + right_party)
        made += [(rates[number], False)] * others
        expected_bands.setdefault(min(9, math.floor(rates[number] * 10)), []).extend(made)
        outcomes += made
    assert [(b["from"], b["to"]) for b in data["buckets"]] == [
        (i / 10, (i + 1) / 10) for i in range(10)
    ]
    for index, band in enumerate(data["buckets"]):
        made = expected_bands.get(index, [])
        connects = sum(connected for _, connected in made)
        assert (band["calls"], band["connects"]) == (len(made), connects), index
        if made:
            assert band["predicted"] == round(sum(r for r, _ in made) / len(made), 4)
            assert band["observed"] == round(connects / len(made), 4)
        else:
            assert (band["predicted"], band["observed"]) == (None, None)
    assert data["auc"] == round(pairs_won(outcomes), 4)

    # The colleague reported calls but scored nothing: their own report counts none.
    empty = await read_report(api, colleague)
    assert (empty["calls"], empty["connects"], empty["auc"]) == (0, 0, None)
    # The other client's calls count for nobody here, and its report has no scores either.
    assert (await read_report(api, stranger))["calls"] == 0


async def test_since_bounds_the_calls_and_an_earlier_score_stays_in_force(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    job_id = await score(app, api, tenant, MOBILE)
    scored = utcnow()
    status = (await entries(api, tenant, job_id))[MOBILE]["status"]
    early, late = scored + timedelta(seconds=60), scored + timedelta(seconds=180)
    await report_calls(
        api,
        tenant,
        [
            {"number": MOBILE, "outcome": "no_answer", "calledAt": stamp(early)},
            {"number": MOBILE, "outcome": "connected", "calledAt": stamp(late)},
        ],
    )
    since = scored + timedelta(seconds=120)
    data = await read_report(api, tenant, since=stamp(since))
    assert data["since"] == stamp(since)
    assert (data["calls"], data["connects"]) == (1, 1)
    assert by_tier(data)[tier(status)]["calls"] == 1
    # A time zone of its own, its '+' sent unencoded as a browser's address bar would.
    offset = since.astimezone(UTC).replace(tzinfo=None).isoformat() + "+00:00"
    response = await api.get(f"{REPORT}?since={offset}", headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["calls"] == 1
    assert (await read_report(api, tenant, since=stamp(scored)))["calls"] == 2
    assert (await read_report(api, tenant, since=stamp(late + timedelta(seconds=1))))["calls"] == 0


async def test_a_call_counts_for_the_latest_score_of_its_number_before_it(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    first_job = await score(app, api, tenant, MOBILE)
    first = (await entries(api, tenant, first_job))[MOBILE]
    # Wrong numbers reported after the first scoring change the score of the second ...
    await report_calls(api, tenant, [{"number": MOBILE, "outcome": "wrong_number"}] * 2)
    rescored = await api.post(f"{V2}/jobs/{first_job}/rescore", headers=tenant.headers)
    assert rescored.status_code == 200, rescored.text
    await settle(app)
    second = (await entries(api, tenant, rescored.json()["data"]["jobId"]))[MOBILE]
    assert tier(first["status"]) != tier(second["status"]), (first, second)
    # ... and a call after that counts for the new score, the two before it for the first.
    later = stamp(utcnow() + timedelta(seconds=1))
    await report_calls(api, tenant, [{"number": MOBILE, "outcome": "connected", "calledAt": later}])

    figures = by_tier(await read_report(api, tenant))
    was, now = figures[tier(first["status"])], figures[tier(second["status"])]
    assert (was["phones"], was["calls"], was["connects"]) == (1, 2, 0)
    assert was["predicted"] == (first["connectRate"] or 0.0)
    assert (now["phones"], now["calls"], now["connects"]) == (1, 1, 1)
    assert now["predicted"] == (second["connectRate"] or 0.0)


async def test_since_defaults_to_90_days_before_the_services_clock(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    await score(app, api, tenant, MOBILE)
    called = utcnow() + timedelta(seconds=10)
    await report_calls(
        api, tenant, [{"number": MOBILE, "outcome": "connected", "calledAt": stamp(called)}]
    )
    for days_later, counted in ((89, 1), (91, 0)):
        now = called + timedelta(days=days_later)
        monkeypatch.setattr(endpoints, "utcnow", lambda now=now: now)
        data = await read_report(api, tenant)
        assert data["since"] == stamp(now - timedelta(days=90))
        assert data["calls"] == counted, days_later


async def test_an_account_with_nothing_scored_lists_every_tier_and_band_empty(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    data = await read_report(api, tenant, since="2026-01-01")
    assert data["since"] == "2026-01-01T00:00:00Z"
    assert (data["calls"], data["connects"], data["auc"]) == (0, 0, None)
    for figures in by_tier(data).values():
        assert figures["calls"] == figures["phones"] == figures["connects"] == 0
        assert figures["predicted"] is figures["observed"] is figures["low"] is None
        assert figures["high"] is None
    assert len(data["buckets"]) == 10
    assert {(b["calls"], b["observed"]) for b in data["buckets"]} == {(0, None)}


# -- refusals --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "since", ["last week", "2026-02-30", "2026-05-01T12:00:00", "2026-05-01T12:00:00+25:00"]
)
async def test_a_since_that_is_no_time_is_400(
    api: httpx.AsyncClient, tenant: Tenant, since: str
) -> None:
    response = await api.get(REPORT, params={"since": since}, headers=tenant.headers)
    assert assert_error(response, 400) == SINCE_MALFORMED
    for header in RATE_HEADERS:
        assert header in response.headers


async def test_without_a_valid_key_it_is_401_and_without_api_access_403(
    api: httpx.AsyncClient, db: Database
) -> None:
    response = await api.get(REPORT)
    assert_error(response, 401)
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert_error(await api.get(REPORT, headers={"Authorization": "Bearer not-a-key"}), 401)
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    assert "api access" in assert_error(await api.get(REPORT, headers=free.headers), 403).lower()
