"""The call verdict in every place a phone is shown (P177): the version 2 contacts, the
job.contact.scored event, the results CSV and the job page, as of a fixed clock."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from dialscore.app import create_app
from dialscore.compliance import RulesError
from dialscore.config import Settings
from dialscore.jobs import callability
from dialscore.kit.db import Database
from dialscore.models import WebhookDelivery
from dialscore.scoring.engine import best_phone
from tests.support import V2, Tenant, contact, settle, submit
from tests.test_dashboard_jobs import read_csv
from tests.web_forms import sign_in_user

# A Tuesday: 14:00 in New York, 11:00 in Los Angeles (daylight time, UTC-4 and UTC-7).
AFTERNOON = datetime(2026, 6, 16, 18, 0, tzinfo=UTC)
# 23:30 in Los Angeles the same Tuesday: after the federal window's 21:00.
LA_NIGHT = datetime(2026, 6, 17, 6, 30, tzinfo=UTC)
LOS_ANGELES = "+14155552671"
MIAMI = "+13054719862"  # Florida: 8:00 to 20:00, 3 calls in 24 hours (Fla. Stat. 501.616)
TOLL_FREE = "+18002345678"  # every zone of the US: only the contact's address narrows it
VERDICT_KEYS = {"timeZone", "callWindow", "callableNow", "nextCallableAt", "bestCallHours"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A subscription to a local address, for the events' bodies.
    return settings.model_copy(update={"webhook_allow_private": True})


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The instant verdicts are worked out for, set by the test: ``clock[0]``."""
    now = [AFTERNOON]
    monkeypatch.setattr(callability, "utcnow", lambda: now[0])
    return now


async def scored_job(api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, people: Any) -> str:
    answer = await submit(api, tenant, people)
    assert answer.status_code == 200, answer.text
    job_id: str = answer.json()["data"]["jobId"]
    await settle(app)
    return job_id


async def contacts_of(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> list[Any]:
    answer = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    found: list[Any] = answer.json()["data"]["contacts"]
    return found


def phone(contacts: list[Any], number: str) -> dict[str, Any]:
    return next(p for c in contacts for p in c["phones"] if p["number"] == number)


async def test_a_contact_read_at_two_instants_has_the_verdict_of_each(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, clock: list[datetime]
) -> None:
    job_id = await scored_job(api, app, tenant, [contact(phone=LOS_ANGELES)])

    clock[0] = AFTERNOON
    entry = phone(await contacts_of(api, tenant, job_id), LOS_ANGELES)
    assert set(entry) >= VERDICT_KEYS and "reasons" in entry
    assert entry["timeZone"] == "America/Los_Angeles"
    assert entry["callableNow"] is True
    assert entry["nextCallableAt"] == "2026-06-16T18:00:00Z"
    assert entry["callWindow"]["start"] == "08:00" and entry["callWindow"]["end"] == "21:00"
    assert entry["callWindow"]["rule"] == "US" and "64.1200" in entry["callWindow"]["source"]
    assert entry["bestCallHours"] and entry["bestCallHours"][0]["basedOnCalls"] == 0

    # The same contact, read at night in the number's zone: from 8:00 the next morning there.
    clock[0] = LA_NIGHT
    entry = phone(await contacts_of(api, tenant, job_id), LOS_ANGELES)
    assert entry["callableNow"] is False
    assert entry["nextCallableAt"] == "2026-06-17T15:00:00Z"  # 8:00 in Los Angeles


async def test_three_calls_in_24_hours_in_florida_hold_the_number_until_the_oldest_leaves(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, clock: list[datetime]
) -> None:
    job_id = await scored_job(api, app, tenant, [contact(phone=MIAMI)])
    assert phone(await contacts_of(api, tenant, job_id), MIAMI)["callableNow"] is True

    oldest = AFTERNOON - timedelta(hours=22)  # Monday 16:00 in Miami
    calls = [
        {"number": MIAMI, "outcome": "no_answer", "calledAt": at.isoformat()}
        for at in (oldest, AFTERNOON - timedelta(hours=5), AFTERNOON - timedelta(hours=3))
    ]
    # A call 2 days ago counts for nothing against the cap.
    calls.append(
        {"number": MIAMI, "outcome": "busy", "calledAt": (oldest - timedelta(days=2)).isoformat()}
    )
    answer = await api.post(f"{V2}/calls", json={"calls": calls}, headers=tenant.headers)
    assert answer.status_code == 200, answer.text

    entry = phone(await contacts_of(api, tenant, job_id), MIAMI)
    assert entry["timeZone"] == "America/New_York"
    assert entry["callWindow"]["end"] == "20:00" and "501.616" in entry["callWindow"]["source"]
    assert entry["callableNow"] is False
    # When the oldest of the three leaves the 24 hours, inside the day's window (16:00 there).
    assert entry["nextCallableAt"] == (oldest + timedelta(hours=24)).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_a_capped_number_shares_no_verdict_with_its_neighbours_shown_with_it(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, clock: list[datetime]
) -> None:
    # Numbers of one block and contacts at one address have one verdict, worked out once for
    # all of them, except a number whose own calls reach the cap: shown before, between and
    # after it, its neighbours stay callable.
    neighbours = ["+13054719863", "+13054719864"]
    people = [contact(phone=neighbours[0]), contact(phone=MIAMI), contact(phone=neighbours[1])]
    job_id = await scored_job(api, app, tenant, people)
    calls = [
        {"number": MIAMI, "outcome": "no_answer", "calledAt": at.isoformat()}
        for at in (AFTERNOON - timedelta(hours=hours) for hours in (1, 2, 3))
    ]
    answer = await api.post(f"{V2}/calls", json={"calls": calls}, headers=tenant.headers)
    assert answer.status_code == 200, answer.text

    shown = await contacts_of(api, tenant, job_id)
    assert phone(shown, MIAMI)["callableNow"] is False
    for number in neighbours:
        entry = phone(shown, number)
        assert entry["callableNow"] is True, number
        assert entry["nextCallableAt"] == "2026-06-16T18:00:00Z"


async def test_an_ambiguous_toll_free_number_is_narrowed_by_the_contacts_state(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, clock: list[datetime]
) -> None:
    people = [
        contact("Ann", "Lee", TOLL_FREE, stateProvince="California"),
        contact("Bob", "Ray", TOLL_FREE),
    ]
    job_id = await scored_job(api, app, tenant, people)
    clock[0] = LA_NIGHT  # 2:30 in New York, 23:30 in Los Angeles
    by_name = {c["firstName"]: c for c in await contacts_of(api, tenant, job_id)}
    narrowed = by_name["Ann"]["phones"][0]
    assert narrowed["timeZone"] == "America/Los_Angeles"
    assert narrowed["callableNow"] is False
    assert narrowed["nextCallableAt"] == "2026-06-17T15:00:00Z"
    # Nothing narrows it: not known, never a guess (P171).
    unknown = by_name["Bob"]["phones"][0]
    assert unknown["timeZone"] is None and unknown["callWindow"] is None
    assert unknown["callableNow"] is None and unknown["nextCallableAt"] is None


async def test_the_scored_event_carries_the_verdict_as_of_its_making(
    api: httpx.AsyncClient, app: FastAPI, db: Database, tenant: Tenant, clock: list[datetime]
) -> None:
    hook = {"name": "r", "url": "http://127.0.0.1:9/hook", "eventTypes": ["job.contact.scored"]}
    answer = await api.post(f"{V2}/webhooks", json=hook, headers=tenant.headers)
    assert answer.status_code in (200, 201), answer.text
    clock[0] = LA_NIGHT
    await scored_job(api, app, tenant, [contact(phone=LOS_ANGELES, phone2="12")])
    async with db.read() as session:
        bodies = (
            await session.scalars(
                select(WebhookDelivery.payload).where(
                    WebhookDelivery.event_type == "job.contact.scored"
                )
            )
        ).all()
    assert len(bodies) == 1 and bodies[0] is not None
    sent = bodies[0]["contact"]
    entry = phone([sent], LOS_ANGELES)
    assert entry["timeZone"] == "America/Los_Angeles"
    assert entry["callableNow"] is False
    assert entry["nextCallableAt"] == "2026-06-17T15:00:00Z"
    assert entry["bestCallHours"]
    # A number kept as submitted because it is not valid: nulls, no guess.
    invalid = [p for p in sent["phones"] if p["number"] != LOS_ANGELES]
    for other in invalid:
        assert {k: other[k] for k in VERDICT_KEYS} == callability.NO_VERDICT


async def test_the_results_csv_has_each_phones_verdict_as_of_the_download(
    api: httpx.AsyncClient, app: FastAPI, db: Database, tenant: Tenant, clock: list[datetime]
) -> None:
    answer = await submit(api, tenant, [contact(phone=LOS_ANGELES)], name="verdicts")
    job_id = answer.json()["data"]["jobId"]
    await settle(app)
    clock[0] = LA_NIGHT
    await sign_in_user(api, db, tenant.user_id)
    download = await api.get(f"/app/jobs/{job_id}/results.csv")
    (row,) = read_csv(download)
    assert row["dialscore Phone 1"] == LOS_ANGELES
    assert row["dialscore Phone 1 Time Zone"] == "America/Los_Angeles"
    assert row["dialscore Phone 1 Callable Now"] == "no"
    assert row["dialscore Phone 1 Next Callable At"] == "2026-06-17T15:00:00Z"
    # Not typed: the prior of other lines (P175), on workdays.
    assert row["dialscore Phone 1 Best Call Hours"].startswith("mon tue wed thu fri 10:00-12:00")
    rows = list(csv.reader(io.StringIO(download.text.lstrip("\ufeff"))))
    assert "dialscore Phone 1 Callable Now" in rows[0]


def test_best_phone_prefers_a_number_callable_now_among_equals() -> None:
    def entry(number: str, position: int, rate: float, now: bool | None) -> dict[str, Any]:
        return {
            "number": number,
            "status": "p2",
            "type": "direct",
            "position": position,
            "ivrPath": None,
            "connectRate": rate,
            "callableNow": now,
        }

    # Without verdicts, D17: the higher connect rate.
    plain = [entry("+1", 1, 0.5, None), entry("+2", 2, 0.3, None)]
    assert best_phone(plain) == {"number": "+1", "status": "p2", "ivrPath": None}
    # With them, among equals (same tier and modifier), the one callable now.
    judged = [entry("+1", 1, 0.5, False), entry("+2", 2, 0.3, True)]
    assert best_phone(judged)["number"] == "+2"  # type: ignore[index]
    # Not among unequals: a better tier stays first though it may not be called now.
    better = [{**entry("+1", 1, 0.5, False), "status": "p1"}, entry("+2", 2, 0.3, True)]
    assert best_phone(better)["number"] == "+1"  # type: ignore[index]


async def test_the_contacts_best_phone_is_the_callable_one_among_equals(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, clock: list[datetime]
) -> None:
    # Two mobiles of equal standing: at 20:30 in Miami (Florida's window has closed) the Los
    # Angeles one may still be called.
    people = [contact(phone=MIAMI, phoneType="mobile", phone2=LOS_ANGELES, phone2Type="mobile")]
    job_id = await scored_job(api, app, tenant, people)
    clock[0] = datetime(2026, 6, 17, 0, 30, tzinfo=UTC)
    (shown,) = await contacts_of(api, tenant, job_id)
    miami, los_angeles = phone([shown], MIAMI), phone([shown], LOS_ANGELES)
    assert (miami["callableNow"], los_angeles["callableNow"]) == (False, True)
    if (
        miami["status"] == los_angeles["status"]
        and miami["connectRate"] == los_angeles["connectRate"]
    ):
        assert shown["bestPhone"]["number"] == LOS_ANGELES
    clock[0] = AFTERNOON  # both callable: D17's order, the first
    (shown,) = await contacts_of(api, tenant, job_id)
    assert shown["bestPhone"]["number"] == MIAMI


async def test_the_job_page_says_callable_now_and_the_next_window_in_words(
    api: httpx.AsyncClient, app: FastAPI, db: Database, tenant: Tenant, clock: list[datetime]
) -> None:
    job_id = await scored_job(api, app, tenant, [contact(phone=LOS_ANGELES)])
    await sign_in_user(api, db, tenant.user_id)
    clock[0] = LA_NIGHT
    page = (await api.get(f"/app/jobs/{job_id}")).text
    assert "Callable now" in page
    assert "from 8:00 tomorrow (their time)" in page
    assert "Best hours (their time): Monday to Friday" in page
    assert "callableNow" not in page and "nextCallableAt" not in page
    clock[0] = AFTERNOON
    page = (await api.get(f"/app/jobs/{job_id}")).text
    assert "until 21:00 (their time)" in page


def test_a_refused_rules_file_stops_the_start(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        'version = "x"\n[jurisdictions.US-FL]\nname = "Florida"\nsource = "s"\n'
        'hours = { start = "20:00", end = "08:00" }\n'
    )
    settings = Settings(
        database_url="sqlite://",
        secret_key="s" * 32,
        compliance_rules=str(rules),
        _env_file=None,  # type: ignore[call-arg]
    )
    with pytest.raises(RulesError, match="rule US-FL, hours: end 08:00 is not after start 20:00"):
        create_app(settings, run_worker=False)


async def test_best_hours_are_learnt_from_the_clients_calls_once_there_are_enough(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, clock: list[datetime]
) -> None:
    """From 30 reported calls to numbers of a line type and zone, their connects teach the best
    hours (P175, P177): here every call on Wednesdays at 14:00 Los Angeles time connected and
    every other one went unanswered, so that hour leads, away from the prior's, and says how
    many calls it rests on."""
    job_id = await scored_job(api, app, tenant, [contact(phone=LOS_ANGELES)])
    prior = phone(await contacts_of(api, tenant, job_id), LOS_ANGELES)["bestCallHours"]
    assert prior and all(hours["basedOnCalls"] == 0 for hours in prior)
    assert not any("wed" in hours["days"] and hours["from"] == "14:00" for hours in prior)

    # Wednesdays at 14:00 in Los Angeles (21:00 UTC in daylight time), over the past weeks;
    # and unanswered calls at the prior's hours (Tuesdays at 10:00 and 16:00 there).
    wednesday = datetime(2026, 6, 10, 21, 0, tzinfo=UTC)
    tuesday = datetime(2026, 6, 9, 17, 0, tzinfo=UTC)
    connected = [
        {"number": LOS_ANGELES, "outcome": "connected", "calledAt": at.isoformat()}
        for at in (wednesday - timedelta(weeks=week) for week in range(12))
    ]
    answer = await api.post(f"{V2}/calls", json={"calls": connected}, headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    # 12 calls are too few to learn from: still the prior.
    assert phone(await contacts_of(api, tenant, job_id), LOS_ANGELES)["bestCallHours"] == prior

    calls = [
        {"number": LOS_ANGELES, "outcome": "no_answer", "calledAt": at.isoformat()}
        for week in range(12)
        for at in (
            tuesday - timedelta(weeks=week),
            tuesday + timedelta(hours=6) - timedelta(weeks=week),
        )
    ]
    answer = await api.post(f"{V2}/calls", json={"calls": calls}, headers=tenant.headers)
    assert answer.status_code == 200, answer.text

    learnt = phone(await contacts_of(api, tenant, job_id), LOS_ANGELES)["bestCallHours"]
    assert learnt != prior
    best = learnt[0]
    assert "wed" in best["days"] and (best["from"], best["to"]) == ("14:00", "15:00")
    # The calls of that hour (the learning needs 36 here, 30 at least, of the type and zone).
    assert best["basedOnCalls"] == 12
    assert best["expectedConnectRate"] > max(hours["expectedConnectRate"] for hours in prior)
