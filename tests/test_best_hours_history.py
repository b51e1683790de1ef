"""The best hours learnt from all of a client's calls to lines of a type and zone (P194), not
only from the calls to the numbers shown: reported calls are counted by line type, time zone
and local hour as they arrive, and the counts can be made again from the calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, event, func, insert, select

from dialscore.calls import service as calls
from dialscore.jobs import callability
from dialscore.kit.db import Database
from dialscore.models import CallHourTally, CallOutcome
from tests.support import V2, Tenant, contact, settle, submit

# A Tuesday afternoon, as tests/test_call_verdicts.py reads verdicts.
AFTERNOON = datetime(2026, 6, 16, 18, 0, tzinfo=UTC)
SHOWN = "+14155552671"  # Los Angeles time, the number whose best hours are read
# Other San Francisco numbers, the same zone: the calls go to these only.
CALLED = ["+14155550101", "+14155550102", "+14155550103"]
DIRECT = "+14155550199"
# Wednesdays at 14:00 and Tuesdays at 10:00 in Los Angeles (daylight time, UTC-7).
WEDNESDAY_2PM = datetime(2026, 6, 10, 21, 0, tzinfo=UTC)
TUESDAY_10AM = datetime(2026, 6, 9, 17, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(callability, "utcnow", lambda: AFTERNOON)


def mobile(first: str, number: str) -> dict[str, Any]:
    return contact(first, "Lee", number, phoneType="mobile")


def reported() -> list[dict[str, Any]]:
    """12 connected calls on Wednesdays at 14:00 and 24 unanswered ones on Tuesdays at 10:00,
    spread over the CALLED numbers: enough to learn from (30)."""
    made = []
    for week in range(12):
        number = CALLED[week % len(CALLED)]
        made.append(
            {
                "number": number,
                "outcome": "connected",
                "calledAt": (WEDNESDAY_2PM - timedelta(weeks=week)).isoformat(),
            }
        )
        for hours in (0, 6):
            at = TUESDAY_10AM + timedelta(hours=hours) - timedelta(weeks=week)
            made.append({"number": number, "outcome": "no_answer", "calledAt": at.isoformat()})
    return made


async def scored(api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, people: Any) -> str:
    answer = await submit(api, tenant, people)
    assert answer.status_code == 200, answer.text
    await settle(app)
    job_id: str = answer.json()["data"]["jobId"]
    return job_id


async def best_hours(
    api: httpx.AsyncClient, tenant: Tenant, job_id: str, number: str
) -> list[dict[str, Any]]:
    answer = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    entry = next(
        p for c in answer.json()["data"]["contacts"] for p in c["phones"] if p["number"] == number
    )
    hours: list[dict[str, Any]] = entry["bestCallHours"]
    return hours


def learnt_wednesday(hours: list[dict[str, Any]]) -> bool:
    best = hours[0]
    return "wed" in best["days"] and best["from"] == "14:00" and best["basedOnCalls"] == 12


async def test_calls_to_other_lines_of_the_type_and_zone_teach_a_numbers_best_hours(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant
) -> None:
    shown = await scored(
        api,
        app,
        tenant,
        [mobile("Ann", SHOWN), contact("Bo", "Ray", DIRECT, phoneType="direct")],
    )
    await scored(api, app, tenant, [mobile(f"P{i}", n) for i, n in enumerate(CALLED)])
    prior = await best_hours(api, tenant, shown, SHOWN)
    direct_prior = await best_hours(api, tenant, shown, DIRECT)
    assert all(hours["basedOnCalls"] == 0 for hours in prior + direct_prior)

    answer = await api.post(f"{V2}/calls", json={"calls": reported()}, headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["acceptedRecordCount"] == 36

    # No call went to the number shown: the calls to the other mobiles of its zone teach it.
    assert learnt_wednesday(await best_hours(api, tenant, shown, SHOWN))
    # A direct line of the same zone learns nothing from calls to mobiles.
    assert await best_hours(api, tenant, shown, DIRECT) == direct_prior


async def test_a_call_naming_its_contact_is_counted_under_that_contacts_line(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, db: Database
) -> None:
    """The number was given as a direct line by one contact and as a mobile by a newer one:
    a call that names the first contact counts for direct lines; one that names none counts
    for the newest contact's line, a mobile."""
    first = await scored(api, app, tenant, [contact("Al", "Ng", CALLED[0], phoneType="direct")])
    await scored(api, app, tenant, [mobile("Cy", CALLED[0])])
    answer = await api.get(f"{V2}/jobs/{first}/contacts", headers=tenant.headers)
    named = answer.json()["data"]["contacts"][0]["id"]
    at = WEDNESDAY_2PM.isoformat()
    body = {
        "calls": [
            {"number": CALLED[0], "outcome": "connected", "calledAt": at, "contactId": named},
            {"number": CALLED[0], "outcome": "no_answer", "calledAt": at},
        ]
    }
    answer = await api.post(f"{V2}/calls", json=body, headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    async with db.read() as session:
        rows = (
            await session.execute(
                select(
                    CallHourTally.line_type,
                    CallHourTally.time_zone,
                    CallHourTally.day,
                    CallHourTally.hour,
                    CallHourTally.weekday,
                    CallHourTally.calls,
                    CallHourTally.connects,
                )
                .where(CallHourTally.client_id == tenant.client_id)
                .order_by(CallHourTally.line_type)
            )
        ).all()
    wednesday = WEDNESDAY_2PM.date()
    assert [tuple(row) for row in rows] == [
        ("direct", "America/Los_Angeles", wednesday, 14, 2, 1, 1),
        ("mobile", "America/Los_Angeles", wednesday, 14, 2, 1, 0),
    ]


async def test_the_counts_are_made_again_from_the_calls(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, db: Database
) -> None:
    """Calls stored before the counts were kept teach nothing until the counts are rebuilt
    (``dialscore admin tally-calls``); rebuilding twice counts each call once."""
    shown = await scored(api, app, tenant, [mobile("Ann", SHOWN)])
    await scored(api, app, tenant, [mobile(f"P{i}", n) for i, n in enumerate(CALLED)])
    answer = await api.post(f"{V2}/calls", json={"calls": reported()}, headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    async with db.unit_of_work() as session:
        await session.execute(delete(CallHourTally))
    assert not learnt_wednesday(await best_hours(api, tenant, shown, SHOWN))

    # The rebuild reads the 90 days before its clock: that of the verdicts here.
    for _ in range(2):
        async with db.unit_of_work() as session:
            counted = await calls.rebuild_tallies(
                session, client_id=tenant.client_id, now=AFTERNOON
            )
        assert counted == 36
    assert learnt_wednesday(await best_hours(api, tenant, shown, SHOWN))
    async with db.read() as session:
        total = await session.scalar(select(func.sum(CallHourTally.calls)))
    assert total == 36


async def test_calls_older_than_the_learning_period_teach_nothing(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, db: Database
) -> None:
    shown = await scored(api, app, tenant, [mobile("Ann", SHOWN)])
    await scored(api, app, tenant, [mobile(f"P{i}", n) for i, n in enumerate(CALLED)])
    old = [
        {**call, "calledAt": (datetime.fromisoformat(call["calledAt"]) - timedelta(days=120))}
        for call in reported()
    ]
    async with db.unit_of_work() as session:
        await session.execute(
            insert(CallOutcome),
            [
                {
                    "client_id": tenant.client_id,
                    "user_id": tenant.user_id,
                    "number": call["number"],
                    "contact_id": None,
                    "outcome": call["outcome"],
                    "ivr_path": None,
                    "called_at": call["calledAt"],
                    "created_at": AFTERNOON,
                }
                for call in old
            ],
        )
        assert await calls.rebuild_tallies(session, client_id=tenant.client_id, now=AFTERNOON) == 0
    answer = await api.post(
        f"{V2}/calls",
        json={"calls": [{**c, "calledAt": c["calledAt"].isoformat()} for c in old]},
        headers=tenant.headers,
    )
    assert answer.status_code == 200, answer.text
    # Counted as they arrive, but outside the 90 days before the verdict's clock.
    assert all(h["basedOnCalls"] == 0 for h in await best_hours(api, tenant, shown, SHOWN))


async def test_a_jobs_batches_share_the_learnt_counts_read_by_the_first(
    api: httpx.AsyncClient, app: FastAPI, tenant: Tenant, db: Database
) -> None:
    # P209: the batches of one job's events read the client's counts once (again once they
    # are a minute old); the calls reported to numbers no cap applies to are not read (P174:
    # California has none).
    await scored(api, app, tenant, [mobile(f"P{i}", n) for i, n in enumerate(CALLED)])
    answer = await api.post(f"{V2}/calls", json={"calls": reported()}, headers=tenant.headers)
    assert answer.status_code == 200, answer.text
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    learnt = callability.JobLearnt(tenant.client_id)
    batch = [callability.Shown([{"number": SHOWN, "type": "mobile"}], None, None, None)]
    event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
    reads = []
    try:
        async with db.read() as session:
            later = AFTERNOON + callability.LEARNT_FOR
            for at in (AFTERNOON, AFTERNOON + timedelta(seconds=30), AFTERNOON, later):
                (done,) = await callability.with_verdicts(
                    session,
                    client_id=tenant.client_id,
                    contacts=batch,
                    rules=callability.rules_in_force(None),
                    now=at,
                    learnt=learnt,
                )
                assert learnt_wednesday(done.phones[0]["bestCallHours"])
                reads.append(sum("call_hour_tallies" in s for s in statements))
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
    assert reads == [1, 1, 1, 2]
    assert not any("call_outcomes" in s for s in statements)
