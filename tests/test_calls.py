"""Reported call outcomes: acceptance, rejection reasons, limits, tenancy, listing, and the
outcomes the scoring engine reads."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import event, func, select

from dialscore.calls import repository as calls_repo
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import CallOutcome
from dialscore.scoring import repository as scoring_repo
from tests.conftest import SECRET
from tests.support import V2, Tenant, add_user, assert_error, make_tenant, many_contacts, submit

NOT_AN_OBJECT = "each call must be a JSON object"
NUMBER_REQUIRED = "number is required"
NUMBER_INVALID = "number is not a valid phone number"
OUTCOME_REQUIRED = "outcome is required"
OUTCOME_UNKNOWN = (
    "outcome must be one of connected, right_party, voicemail, voicemail_name_match, "
    "no_answer, busy, gatekeeper, ivr, screened, wrong_number, disconnected, dnc_request"
)
CONTACT_ID_MALFORMED = "contactId must be a UUID"
CONTACT_NOT_OURS = "contactId is not a contact of this client"
IVR_PATH_TOO_LONG = "ivrPath is longer than 200 characters"
IVR_PATH_UNPRINTABLE = "ivrPath must contain only printable characters"
CALLED_AT_MALFORMED = "calledAt must be an ISO 8601 date-time with a time zone"
CALLED_AT_IN_FUTURE = "calledAt is more than 5 minutes in the future"
CALLED_AT_TOO_EARLY = "calledAt is before 2000"
REPLAYED = "Idempotent-Replayed"
ANN = "+14155552671"
BOB = "+447911123456"
BASE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def call(number: Any = ANN, outcome: Any = "connected", **extra: Any) -> dict[str, Any]:
    return {"number": number, "outcome": outcome, **extra}


def stamp(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def report(
    api: httpx.AsyncClient, tenant: Tenant, calls: Any, *, key: str | None = None
) -> httpx.Response:
    headers = dict(tenant.headers)
    if key is not None:
        headers["Idempotency-Key"] = key
    return await api.post(f"{V2}/calls", json={"calls": calls}, headers=headers)


async def report_ok(api: httpx.AsyncClient, tenant: Tenant, calls: Any) -> dict[str, Any]:
    response = await report(api, tenant, calls)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def stored(db: Database, client_id: str | None = None) -> list[CallOutcome]:
    query = select(CallOutcome).order_by(CallOutcome.id)
    if client_id is not None:
        query = query.where(CallOutcome.client_id == client_id)
    async with db.read() as session:
        return list((await session.scalars(query)).all())


async def stored_count(db: Database) -> int:
    async with db.read() as session:
        return int(await session.scalar(select(func.count()).select_from(CallOutcome)) or 0)


async def listing(
    api: httpx.AsyncClient, tenant: Tenant, number: str, **params: Any
) -> dict[str, Any]:
    response = await api.get(
        f"{V2}/calls", params={"number": number, **params}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data"}
    data: dict[str, Any] = body["data"]
    return data


async def contact_ids(api: httpx.AsyncClient, tenant: Tenant, count: int = 1) -> list[str]:
    """Ids of new contacts of the tenant's client, made by a scoring submission."""
    submitted = await submit(api, tenant, many_contacts(count))
    assert submitted.status_code == 200, submitted.text
    job_id = submitted.json()["data"]["jobId"]
    response = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert response.status_code == 200, response.text
    return [c["id"] for c in response.json()["data"]["contacts"]]


def pagination(
    page: int, per_page: int, total: int, pages: int, has_next: bool, has_previous: bool
) -> dict[str, Any]:
    return {
        "page": page,
        "perPage": per_page,
        "totalCount": total,
        "totalPages": pages,
        "hasNextPage": has_next,
        "hasPreviousPage": has_previous,
    }


# -- accepting and storing -------------------------------------------------------------------------


async def test_accepted_calls_are_stored_normalised(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    before = utcnow()
    calls = [
        call(ANN, "connected", calledAt="2024-05-01T09:30:00Z"),
        # National number read as NANP; outcome in any case, spaces around values trimmed.
        call("(415) 555-2671", " Voicemail_Name_Match ", ivrPath=" 1,2,#,w9 "),
        # National number read in the given country; a time with an offset is stored as UTC.
        call("07911 123456", "gatekeeper", country="gb", calledAt="2024-05-01T14:00:00+02:00"),
        # A JSON number is read as its decimal text; no calledAt means now.
        {"number": 4155552671, "outcome": "no_answer"},
        # Optional fields that are blank or null are absent.
        call(BOB, "busy", country=None, contactId="", ivrPath="   ", calledAt=None),
    ]
    body = await report_ok(api, tenant, calls)
    after = utcnow()
    assert body == {"data": {"totalRecordCount": 5, "acceptedRecordCount": 5}, "error": None}

    rows = await stored(db)
    assert [(r.number, r.outcome, r.ivr_path, r.contact_id) for r in rows] == [
        (ANN, "connected", None, None),
        (ANN, "voicemail_name_match", "1,2,#,w9", None),
        (BOB, "gatekeeper", None, None),
        (ANN, "no_answer", None, None),
        (BOB, "busy", None, None),
    ]
    assert {(r.client_id, r.user_id) for r in rows} == {(tenant.client_id, tenant.user_id)}
    assert rows[0].called_at == datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    assert rows[2].called_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    # Defaults and creation times are the time of the request, one instant for the request.
    for row in rows:
        assert before <= row.created_at <= after
        assert row.created_at == rows[0].created_at
    assert rows[3].called_at == rows[4].called_at == rows[0].created_at


async def test_example_of_the_scoring_document(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    # docs/scoring.md, "Feeding call outcomes".
    calls = [
        {"number": "+14155550123", "outcome": "no_answer", "calledAt": "2026-11-20T15:04:00Z"},
        {"number": "+14155550123", "outcome": "ivr", "ivrPath": "1,3,#"},
    ]
    body = await report_ok(api, tenant, calls)
    assert body == {"data": {"totalRecordCount": 2, "acceptedRecordCount": 2}, "error": None}
    assert [(r.outcome, r.ivr_path) for r in await stored(db)] == [
        ("no_answer", None),
        ("ivr", "1,3,#"),
    ]


async def test_own_contact_id_is_stored_canonical(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    first, second = await contact_ids(api, tenant, 2)
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    # The number need not be one the contact carries; a colleague's contact is the client's.
    body = await report_ok(
        api,
        colleague,
        [call(BOB, contactId=first.upper()), call(ANN, "right_party", contactId=second)],
    )
    assert body["data"] == {"totalRecordCount": 2, "acceptedRecordCount": 2}
    rows = await stored(db)
    assert [(r.contact_id, r.user_id, r.client_id) for r in rows] == [
        (first, colleague.user_id, tenant.client_id),
        (second, colleague.user_id, tenant.client_id),
    ]


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"ivrPath": "9" * 200}, id="ivr-path-of-200"),
        pytest.param({"ivrPath": "  " + "9" * 200 + "\t"}, id="ivr-path-trimmed-to-200"),
        pytest.param({"calledAt": "2000-01-01T00:00:00Z"}, id="first-instant-of-2000"),
        pytest.param({"calledAt": "2000-01-01T00:00:00-05:00"}, id="2000-with-offset"),
        pytest.param({"unknownField": {"kept": False}}, id="unknown-field-ignored"),
        pytest.param({"number": "+1 415 555 2671 ext. 12"}, id="extension-dropped"),
    ],
)
async def test_values_at_the_limits_are_accepted(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, extra: dict[str, Any]
) -> None:
    body = await report_ok(api, tenant, [call(**extra)])
    assert body["error"] is None
    [row] = await stored(db)
    assert row.number == ANN
    if "ivrPath" in extra:
        assert row.ivr_path == extra["ivrPath"].strip()
    if "calledAt" in extra:
        assert row.called_at == datetime.fromisoformat(extra["calledAt"])


async def test_call_a_little_in_the_future_is_accepted(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    # A dialer's clock running up to 5 minutes ahead is tolerated.
    ahead = (utcnow() + timedelta(minutes=4)).replace(microsecond=0)
    body = await report_ok(api, tenant, [call(calledAt=stamp(ahead))])
    assert body["error"] is None
    assert [r.called_at for r in await stored(db)] == [ahead]


# -- rejection reasons -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        pytest.param({"outcome": "busy"}, NUMBER_REQUIRED, id="no-number"),
        pytest.param(call(None), NUMBER_REQUIRED, id="null-number"),
        pytest.param(call("  "), NUMBER_REQUIRED, id="blank-number"),
        pytest.param(call({"e164": ANN}), "number must be a string", id="object-number"),
        pytest.param(call(True), "number must be a string", id="boolean-number"),
        pytest.param(call("12345"), NUMBER_INVALID, id="short-number"),
        pytest.param(call("not a number"), NUMBER_INVALID, id="text-number"),
        pytest.param(call("07911 123456"), NUMBER_INVALID, id="british-number-read-as-us"),
        pytest.param(call("07911 123456", country="XX"), NUMBER_INVALID, id="unknown-country"),
        pytest.param(call(ANN, country=44), "country must be a string", id="number-country"),
        pytest.param({"number": ANN}, OUTCOME_REQUIRED, id="no-outcome"),
        pytest.param(call(outcome=""), OUTCOME_REQUIRED, id="empty-outcome"),
        pytest.param(call(outcome="answered"), OUTCOME_UNKNOWN, id="unknown-outcome"),
        pytest.param(call(outcome="no answer"), OUTCOME_UNKNOWN, id="outcome-with-space"),
        pytest.param(call(outcome=3), "outcome must be a string", id="number-outcome"),
        pytest.param(call(contactId="contact-7"), CONTACT_ID_MALFORMED, id="malformed-contact"),
        pytest.param(call(contactId=7), "contactId must be a string", id="number-contact"),
        pytest.param(
            call(contactId="00000000-0000-4000-8000-000000000000"),
            CONTACT_NOT_OURS,
            id="unknown-contact",
        ),
        pytest.param(call(ivrPath="9" * 201), IVR_PATH_TOO_LONG, id="ivr-path-of-201"),
        pytest.param(call(ivrPath="1\n2"), IVR_PATH_UNPRINTABLE, id="ivr-path-newline"),
        pytest.param(call(ivrPath="1\x7f2"), IVR_PATH_UNPRINTABLE, id="ivr-path-delete"),
        pytest.param(call(ivrPath=["1", "2"]), "ivrPath must be a string", id="ivr-path-array"),
        pytest.param(call(calledAt="yesterday"), CALLED_AT_MALFORMED, id="called-at-text"),
        pytest.param(
            call(calledAt="2024-05-01T10:00:00"), CALLED_AT_MALFORMED, id="called-at-no-zone"
        ),
        pytest.param(call(calledAt="2024-05-01"), CALLED_AT_MALFORMED, id="called-at-date"),
        pytest.param(
            call(calledAt=1714557600), "calledAt must be a string", id="called-at-unix-number"
        ),
        pytest.param(
            call(calledAt="1999-12-31T23:59:59Z"), CALLED_AT_TOO_EARLY, id="called-at-1999"
        ),
        pytest.param(
            call(calledAt="2000-01-01T00:30:00+01:00"),
            CALLED_AT_TOO_EARLY,
            id="called-at-1999-in-utc",
        ),
        pytest.param(
            call(calledAt="0001-01-01T00:00:00+01:00"),
            CALLED_AT_TOO_EARLY,
            id="called-at-before-year-1-in-utc",
        ),
        pytest.param(
            call(calledAt="9999-12-31T23:59:59-01:00"),
            CALLED_AT_IN_FUTURE,
            id="called-at-after-year-9999-in-utc",
        ),
        # One reason per record: the first field's, in the documented order.
        pytest.param(call("12345", "answered"), NUMBER_INVALID, id="number-before-outcome"),
        pytest.param(
            call("12345", contactId=5), "contactId must be a string", id="shapes-before-rules"
        ),
        pytest.param(
            call(outcome="answered", calledAt="yesterday"), OUTCOME_UNKNOWN, id="outcome-first"
        ),
    ],
)
async def test_rejection_reason(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, record: dict[str, Any], reason: str
) -> None:
    good = call(BOB, "busy")
    body = await report_ok(api, tenant, [good, record])
    assert body == {
        "data": {"totalRecordCount": 2, "acceptedRecordCount": 1},
        "error": {"rejectedRecordCount": 1, "records": [{**record, "rejectedReason": reason}]},
    }
    assert [(r.number, r.outcome) for r in await stored(db)] == [(BOB, "busy")]


async def test_call_too_far_in_the_future_is_rejected(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    ahead = call(calledAt=stamp(utcnow() + timedelta(minutes=6)))
    body = await report_ok(api, tenant, [ahead])
    assert body["error"] == {
        "rejectedRecordCount": 1,
        "records": [{**ahead, "rejectedReason": CALLED_AT_IN_FUTURE}],
    }
    assert await stored(db) == []


@pytest.mark.parametrize("element", ["+14155552671", 5, None, [ANN, "busy"], True])
async def test_element_that_is_not_an_object_is_rejected(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, element: Any
) -> None:
    body = await report_ok(api, tenant, [call(), element])
    assert body["data"]["acceptedRecordCount"] == 1
    assert body["error"] == {
        "rejectedRecordCount": 1,
        "records": [{"input": element, "rejectedReason": NOT_AN_OBJECT}],
    }
    assert len(await stored(db)) == 1


async def test_rejections_keep_request_order_and_nothing_rejected_is_stored(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    calls = [
        call(outcome="answered"),
        call(BOB, "busy"),
        call("12345"),
        call(ANN, "ivr", ivrPath="2,1"),
        call(contactId="nope"),
    ]
    body = await report_ok(api, tenant, calls)
    assert body["data"] == {"totalRecordCount": 5, "acceptedRecordCount": 2}
    assert [r["rejectedReason"] for r in body["error"]["records"]] == [
        OUTCOME_UNKNOWN,
        NUMBER_INVALID,
        CONTACT_ID_MALFORMED,
    ]
    assert body["error"]["rejectedRecordCount"] == 3
    assert [(r.number, r.outcome, r.ivr_path) for r in await stored(db)] == [
        (BOB, "busy", None),
        (ANN, "ivr", "2,1"),
    ]


async def test_every_call_rejected_answers_200_and_stores_nothing(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    body = await report_ok(api, tenant, [call("1"), call(outcome="x")])
    assert body["data"] == {"totalRecordCount": 2, "acceptedRecordCount": 0}
    assert body["error"]["rejectedRecordCount"] == 2
    assert await stored(db) == []


# -- request limits --------------------------------------------------------------------------------


async def test_1000_calls_are_accepted(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    calls = [call(f"+1415555{i:04d}", "no_answer") for i in range(1000)]
    body = await report_ok(api, tenant, calls)
    assert body == {"data": {"totalRecordCount": 1000, "acceptedRecordCount": 1000}, "error": None}
    rows = await stored(db)
    assert len(rows) == 1000
    assert {r.number for r in rows} == {c["number"] for c in calls}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param({"calls": [call()] * 1001}, "at most 1000", id="1001-calls"),
        pytest.param({"calls": []}, "must not be empty", id="empty"),
        pytest.param({}, "'calls' is required", id="no-calls"),
        pytest.param({"calls": None}, "'calls' is required", id="null-calls"),
        pytest.param({"calls": call()}, "must be an array", id="object-calls"),
        pytest.param({"calls": "busy"}, "must be an array", id="string-calls"),
        pytest.param([call()], "JSON object", id="array-body"),
        pytest.param("calls", "JSON object", id="string-body"),
    ],
)
async def test_bad_request_is_400_and_stores_nothing(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, body: Any, message: str
) -> None:
    response = await api.post(f"{V2}/calls", json=body, headers=tenant.headers)
    assert message in assert_error(response, 400)
    assert await stored_count(db) == 0


@pytest.mark.parametrize("content", [b"", b"{calls: []}", b"\xff\xfe", b"   "])
async def test_body_that_is_not_json_is_400(
    api: httpx.AsyncClient, tenant: Tenant, content: bytes
) -> None:
    headers = {**tenant.headers, "Content-Type": "application/json"}
    response = await api.post(f"{V2}/calls", content=content, headers=headers)
    assert_error(response, 400)


async def test_body_over_10_mib_is_413(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    content = b'{"calls": [{"number": "' + b"1" * (10 * 1024 * 1024) + b'"}]}'
    headers = {**tenant.headers, "Content-Type": "application/json"}
    response = await api.post(f"{V2}/calls", content=content, headers=headers)
    assert_error(response, 413)
    assert await stored_count(db) == 0


# -- authentication and plans ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["post", "get"])
async def test_no_key_is_401(api: httpx.AsyncClient, db: Database, method: str) -> None:
    if method == "post":
        response = await api.post(f"{V2}/calls", json={"calls": [call()]})
    else:
        response = await api.get(f"{V2}/calls", params={"number": ANN})
    assert_error(response, 401)
    assert response.headers["www-authenticate"] == "Bearer"
    assert await stored_count(db) == 0


@pytest.mark.parametrize("method", ["post", "get"])
async def test_plan_without_api_access_is_403(
    api: httpx.AsyncClient, db: Database, method: str
) -> None:
    free = await make_tenant(db, SECRET, plan="free")
    if method == "post":
        response = await report(api, free, [call()])
    else:
        response = await api.get(f"{V2}/calls", params={"number": ANN}, headers=free.headers)
    assert "API access" in assert_error(response, 403)
    assert await stored_count(db) == 0


async def test_reporting_charges_no_credits(api: httpx.AsyncClient, tenant: Tenant) -> None:
    await report_ok(api, tenant, [call(), call(BOB)])
    response = await api.get(f"{V2}/account/credits", headers=tenant.headers)
    assert response.json() == {
        "data": {"credits": 1000, "key": {"monthlyCreditLimit": None, "spentThisMonth": 0}}
    }


# -- tenancy ---------------------------------------------------------------------------------------


async def test_contact_of_another_client_is_rejected(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    other = await make_tenant(db, SECRET, name="Globex")
    [theirs] = await contact_ids(api, other)
    [mine] = await contact_ids(api, tenant)
    calls = [call(contactId=theirs), call(BOB, contactId=mine)]
    body = await report_ok(api, tenant, calls)
    assert body["data"] == {"totalRecordCount": 2, "acceptedRecordCount": 1}
    assert body["error"]["records"] == [{**calls[0], "rejectedReason": CONTACT_NOT_OURS}]
    assert [(r.number, r.contact_id) for r in await stored(db)] == [(BOB, mine)]


async def test_other_clients_calls_are_invisible(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    other = await make_tenant(db, SECRET, name="Globex")
    await report_ok(api, other, [call(ANN, "wrong_number", calledAt="2024-05-01T10:00:00Z")])
    await report_ok(api, tenant, [call(ANN, "connected", calledAt="2024-05-01T11:00:00Z")])
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")

    for viewer in (tenant, colleague):
        data = await listing(api, viewer, ANN)
        assert [c["outcome"] for c in data["calls"]] == ["connected"]
        assert data["pagination"]["totalCount"] == 1
    data = await listing(api, other, ANN)
    assert [c["outcome"] for c in data["calls"]] == ["wrong_number"]

    async with db.read() as session:
        mine = await scoring_repo.outcomes_for(session, tenant.client_id, [ANN])
        theirs = await scoring_repo.outcomes_for(session, other.client_id, [ANN])
    assert [r.outcome for r in mine[ANN]] == ["connected"]
    assert [r.outcome for r in theirs[ANN]] == ["wrong_number"]


# -- Idempotency-Key -------------------------------------------------------------------------------


async def test_same_key_and_body_replays_without_storing_again(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    calls = [call(), call(outcome="answered")]
    first = await report(api, tenant, calls, key="batch-1")
    assert first.status_code == 200, first.text
    assert REPLAYED not in first.headers
    second = await report(api, tenant, calls, key="batch-1")
    assert second.status_code == 200, second.text
    assert second.headers.get(REPLAYED) == "true"
    assert second.json() == first.json()
    assert len(await stored(db)) == 1


async def test_same_key_with_other_calls_is_409(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    assert (await report(api, tenant, [call()], key="batch-2")).status_code == 200
    assert_error(await report(api, tenant, [call(BOB)], key="batch-2"), 409)
    assert [r.number for r in await stored(db)] == [ANN]


async def test_key_of_a_submission_is_another_key_for_calls(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    # P76: keys are per operation, so the same key reports the calls.
    headers = {**tenant.headers, "Idempotency-Key": "shared"}
    body = {"contacts": many_contacts(1), "calls": [call()]}
    submitted = await api.post(f"{V2}/contacts/score", json=body, headers=headers)
    assert submitted.status_code == 200, submitted.text
    response = await api.post(f"{V2}/calls", json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert REPLAYED not in response.headers
    assert response.json()["data"] == {"totalRecordCount": 1, "acceptedRecordCount": 1}
    assert await stored_count(db) == 1


async def test_without_key_reports_are_not_deduplicated(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    calls = [call(calledAt="2024-05-01T10:00:00Z")]
    await report_ok(api, tenant, calls)
    second = await report(api, tenant, calls)
    assert REPLAYED not in second.headers
    assert len(await stored(db)) == 2


async def test_concurrent_reports_with_same_key_store_once(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    calls = [call(f"+1415555{i:04d}") for i in range(5)]
    responses = await asyncio.gather(*(report(api, tenant, calls, key="burst") for _ in range(6)))
    assert [r.status_code for r in responses] == [200] * 6, [r.text for r in responses]
    assert sum(1 for r in responses if r.headers.get(REPLAYED) == "true") == 5
    assert len(await stored(db)) == 5


@pytest.mark.parametrize("key", ["", "   ", "k" * 256])
async def test_bad_idempotency_key_is_400(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, key: str
) -> None:
    assert "Idempotency-Key" in assert_error(await report(api, tenant, [call()], key=key), 400)
    assert await stored_count(db) == 0


# -- GET /calls ------------------------------------------------------------------------------------


async def test_listing_is_newest_first_by_call_time_with_every_field(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    [contact_id] = await contact_ids(api, tenant)
    minutes = [3, 0, 4, 1, 2]
    calls = [
        call(ANN, "busy", calledAt=stamp(BASE + timedelta(minutes=m)), ivrPath=f"{m}#")
        for m in minutes
    ]
    calls[2]["contactId"] = contact_id
    await report_ok(api, tenant, [*calls, call(BOB, "connected")])
    rows = {r.called_at: r for r in await stored(db, tenant.client_id)}

    data = await listing(api, tenant, ANN)
    assert set(data) == {"calls", "pagination"}
    assert [c["calledAt"] for c in data["calls"]] == [
        stamp(BASE + timedelta(minutes=m)) for m in (4, 3, 2, 1, 0)
    ]
    assert data["pagination"] == pagination(1, 100, 5, 1, False, False)
    newest = rows[BASE + timedelta(minutes=4)]
    assert data["calls"][0] == {
        "id": str(newest.id),
        "number": ANN,
        "contactId": contact_id,
        "outcome": "busy",
        "ivrPath": "4#",
        "calledAt": "2024-05-01T12:04:00Z",
        "createdAt": stamp(newest.created_at),
    }
    assert [c["contactId"] for c in data["calls"][1:]] == [None] * 4


async def test_listing_pages(api: httpx.AsyncClient, db: Database, tenant: Tenant) -> None:
    calls = [call(calledAt=stamp(BASE + timedelta(seconds=s))) for s in range(5)]
    await report_ok(api, tenant, calls)
    newest_first = [stamp(BASE + timedelta(seconds=s)) for s in (4, 3, 2, 1, 0)]
    expected = {
        1: (newest_first[0:2], pagination(1, 2, 5, 3, True, False)),
        2: (newest_first[2:4], pagination(2, 2, 5, 3, True, True)),
        3: (newest_first[4:5], pagination(3, 2, 5, 3, False, True)),
        4: ([], pagination(4, 2, 5, 3, False, True)),
    }
    for page, (times, pages) in expected.items():
        data = await listing(api, tenant, ANN, page=page, limit=2)
        assert [c["calledAt"] for c in data["calls"]] == times, page
        assert data["pagination"] == pages, page


async def test_calls_at_the_same_time_are_listed_newest_report_first(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    at = "2024-05-01T10:00:00Z"
    await report_ok(api, tenant, [call(outcome="busy", calledAt=at)])
    await report_ok(api, tenant, [call(outcome="connected", calledAt=at)])
    data = await listing(api, tenant, ANN)
    assert [c["outcome"] for c in data["calls"]] == ["connected", "busy"]


@pytest.mark.parametrize(
    ("number", "params"),
    [
        pytest.param("(415) 555-2671", {}, id="national-us"),
        pytest.param("4155552671", {}, id="digits"),
        pytest.param("+1 415 555 2671", {}, id="formatted"),
        pytest.param("07911 123456", {"country": "GB"}, id="national-gb"),
    ],
)
async def test_listing_reads_the_number_like_reports_do(
    api: httpx.AsyncClient, tenant: Tenant, number: str, params: dict[str, str]
) -> None:
    await report_ok(api, tenant, [call(ANN, "busy"), call(BOB, "connected")])
    data = await listing(api, tenant, number, **params)
    expected = BOB if params else ANN
    assert [c["number"] for c in data["calls"]] == [expected]


async def test_listing_accepts_an_unencoded_plus(api: httpx.AsyncClient, tenant: Tenant) -> None:
    await report_ok(api, tenant, [call(BOB, "voicemail")])
    # In a query string an unencoded '+' means a space.
    response = await api.get(f"{V2}/calls?number=+447911123456", headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert [c["number"] for c in response.json()["data"]["calls"]] == [BOB]


async def test_listing_a_number_without_calls(api: httpx.AsyncClient, tenant: Tenant) -> None:
    await report_ok(api, tenant, [call(BOB)])
    data = await listing(api, tenant, ANN)
    assert data == {"calls": [], "pagination": pagination(1, 100, 0, 0, False, False)}


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"number": ""},
        {"number": "12345"},
        {"number": "07911 123456"},
        {"number": ANN, "limit": 0},
        {"number": ANN, "limit": 1001},
        {"number": ANN, "page": 0},
        {"number": ANN, "page": "first"},
    ],
    ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()) or "no-number",
)
async def test_listing_bad_query_is_400(
    api: httpx.AsyncClient, tenant: Tenant, params: dict[str, Any]
) -> None:
    response = await api.get(f"{V2}/calls", params=params, headers=tenant.headers)
    assert_error(response, 400)


@pytest.mark.parametrize("limit", [1, 1000])
async def test_listing_limit_bounds_are_accepted(
    api: httpx.AsyncClient, tenant: Tenant, limit: int
) -> None:
    await report_ok(api, tenant, [call(outcome="busy"), call(outcome="no_answer")])
    data = await listing(api, tenant, ANN, limit=limit)
    assert len(data["calls"]) == min(limit, 2)
    assert data["pagination"]["perPage"] == limit
    assert data["pagination"]["totalPages"] == (2 if limit == 1 else 1)


# -- outcomes_for: what the scoring engine reads --------------------------------------------------


def _row(client_id: str, number: str, outcome: str, at: datetime, **extra: Any) -> dict[str, Any]:
    return {
        "client_id": client_id,
        "user_id": client_id,
        "number": number,
        "contact_id": None,
        "outcome": outcome,
        "ivr_path": None,
        "called_at": at,
        "created_at": BASE,
        **extra,
    }


async def _insert(db: Database, rows: list[dict[str, Any]]) -> None:
    async with db.unit_of_work() as session:
        await calls_repo.insert_outcomes(session, rows)


@contextmanager
def statements_on(db: Database, table: str) -> Iterator[list[str]]:
    """The SQL statements that name ``table`` while the block runs."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if table in statement:
            seen.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", record)


async def test_outcomes_for_orders_each_number_by_call_time(db: Database, tenant: Tenant) -> None:
    client = tenant.client_id
    at = [BASE + timedelta(hours=h) for h in range(4)]
    await _insert(
        db,
        [
            _row(client, ANN, "busy", at[2]),
            _row(client, BOB, "ivr", at[1], ivr_path="1,2"),
            _row(client, ANN, "no_answer", at[0]),
            _row(client, ANN, "connected", at[3]),
            # Same time as the first busy: the earlier report comes first.
            _row(client, ANN, "voicemail", at[2]),
        ],
    )
    async with db.read() as session:
        found = await scoring_repo.outcomes_for(session, client, [ANN, BOB, "+12125550100", ANN])
    # (outcome, called_at, ivr_path, contact_id): none of these calls named a contact.
    assert found == {
        ANN: [
            ("no_answer", at[0], None, None),
            ("busy", at[2], None, None),
            ("voicemail", at[2], None, None),
            ("connected", at[3], None, None),
        ],
        BOB: [("ivr", at[1], "1,2", None)],
        "+12125550100": [],
    }
    first = found[ANN][0]
    assert isinstance(first, scoring_repo.CallRecordRow)
    assert (first.outcome, first.called_at, first.ivr_path) == ("no_answer", at[0], None)
    assert first.called_at.tzinfo is not None


async def test_outcomes_for_since_is_inclusive(db: Database, tenant: Tenant) -> None:
    at = [BASE + timedelta(days=d) for d in range(3)]
    outcomes = ("connected", "busy", "ivr")
    await _insert(
        db, [_row(tenant.client_id, ANN, o, t) for o, t in zip(outcomes, at, strict=True)]
    )
    async with db.read() as session:
        found = await scoring_repo.outcomes_for(session, tenant.client_id, [ANN], since=at[1])
        nothing = await scoring_repo.outcomes_for(session, tenant.client_id, [])
    assert [(r.outcome, r.called_at) for r in found[ANN]] == [("busy", at[1]), ("ivr", at[2])]
    assert nothing == {}


async def test_outcomes_for_1200_numbers_in_one_query(db: Database, tenant: Tenant) -> None:
    other = await make_tenant(db, SECRET, name="Globex")
    numbers = [f"+1212555{i:04d}" for i in range(1200)]
    rows = [_row(tenant.client_id, n, "no_answer", BASE) for n in numbers]
    rows += [_row(tenant.client_id, n, "connected", BASE + timedelta(days=1)) for n in numbers[::7]]
    rows += [_row(other.client_id, n, "wrong_number", BASE) for n in numbers[::3]]
    await _insert(db, rows)

    with statements_on(db, "call_outcomes") as statements:
        async with db.read() as session:
            found = await scoring_repo.outcomes_for(session, tenant.client_id, numbers)
    assert len(statements) == 1
    assert set(found) == set(numbers)
    for index, number in enumerate(numbers):
        expected = ["no_answer", "connected"] if index % 7 == 0 else ["no_answer"]
        assert [r.outcome for r in found[number]] == expected, number
