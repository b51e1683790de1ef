"""Credits (D9) and Idempotency-Key (D10) of submissions."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from dialscore import idempotency
from dialscore.accounts import service as accounts
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import CreditLedgerEntry, IdempotencyRecord, Job
from dialscore.submissions import service as submissions
from tests.conftest import SECRET
from tests.support import (
    V2,
    Tenant,
    add_user,
    amount,
    contact,
    ledger_sum,
    make_tenant,
    many_contacts,
    submit,
)

REPLAYED = "Idempotent-Replayed"


async def balance(api: httpx.AsyncClient, tenant: Tenant) -> Decimal:
    response = await api.get(f"{V2}/account/credits", headers=tenant.headers)
    assert response.status_code == 200, response.text
    return amount(response.json()["data"]["credits"])


async def job_ids(api: httpx.AsyncClient, tenant: Tenant) -> list[str]:
    response = await api.get(f"{V2}/jobs", headers=tenant.headers)
    assert response.status_code == 200, response.text
    return [job["id"] for job in response.json()["data"]["jobs"]]


async def ledger_rows(db: Database, client_id: str) -> int:
    async with db.read() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(CreditLedgerEntry)
            .where(CreditLedgerEntry.client_id == client_id)
        )
    return int(count or 0)


async def jobs_of_client(db: Database, client_id: str) -> int:
    async with db.read() as session:
        count = await session.scalar(
            select(func.count()).select_from(Job).where(Job.client_id == client_id)
        )
    return int(count or 0)


async def post(
    api: httpx.AsyncClient,
    tenant: Tenant,
    body: dict[str, Any],
    *,
    key: str | None = None,
    kind: str = "score",
) -> httpx.Response:
    headers = dict(tenant.headers)
    if key is not None:
        headers["Idempotency-Key"] = key
    return await api.post(f"{V2}/contacts/{kind}", json=body, headers=headers)


# -- D9: what a submission charges -----------------------------------------------------------------


async def test_scoring_charges_valid_distinct_phones_of_accepted_contacts(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    contacts = [
        # One number written twice: charged once.
        contact(phone="+14155552671", phone2="(415) 555-2671"),
        # Two valid numbers and an invalid one: two charged.
        contact("Bob", "Ray", "+447911123456", phone2="12345", phone3="415.555.0199"),
        # Rejected records cost nothing.
        contact("", "Nobody", "+14155550123"),
        contact(phone="+14155552671", phone2="(415) 555-2671"),
    ]
    response = await submit(api, tenant, contacts)
    assert response.status_code == 200, response.text
    credits = response.json()["credits"]
    assert (credits["phoneCount"], amount(credits["creditsCharged"])) == (3, Decimal("0.15"))
    assert amount(credits["creditsRemaining"]) == Decimal("999.85")
    assert await balance(api, tenant) == Decimal("999.85")
    assert await ledger_sum(db, tenant.client_id) == Decimal("999.85")


async def test_enrichment_charges_per_accepted_contact(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    contacts = [
        {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme"},
        {"firstName": "Bob", "linkedInUrl": "https://linkedin.com/in/bob", "phone": "+14155552671"},
        {"email": "cy@example.com", "companyLinkedInUrl": "https://linkedin.com/company/x"},
        {"firstName": "Dee", "lastName": "Ode"},  # rejected: no company or URL
    ]
    response = await submit(api, tenant, contacts, kind="enrich")
    assert response.status_code == 200, response.text
    credits = response.json()["credits"]
    assert (credits["contactCount"], amount(credits["creditsCharged"])) == (3, Decimal(3))
    assert amount(credits["creditsRemaining"]) == Decimal(997)
    assert await balance(api, tenant) == Decimal(997)
    assert await ledger_sum(db, tenant.client_id) == Decimal(997)


async def test_successive_submissions_keep_ledger_and_balance_equal(
    db: Database, api: httpx.AsyncClient
) -> None:
    owner = await make_tenant(db, SECRET, credits=Decimal("2.5"))
    remaining = []
    for start in (0, 10, 20):
        response = await submit(api, owner, many_contacts(4, start=start))
        assert response.status_code == 200, response.text
        remaining.append(amount(response.json()["credits"]["creditsRemaining"]))
    assert remaining == [Decimal("2.3"), Decimal("2.1"), Decimal("1.9")]
    assert await balance(api, owner) == await ledger_sum(db, owner.client_id) == Decimal("1.9")
    assert await ledger_rows(db, owner.client_id) == 4


@pytest.mark.parametrize(
    ("kind", "contacts", "credits", "need"),
    [
        pytest.param("score", many_contacts(3), Decimal("0.1"), Decimal("0.15"), id="score"),
        pytest.param(
            "score", many_contacts(1), Decimal(0), Decimal("0.05"), id="score-empty-balance"
        ),
        pytest.param(
            "enrich",
            [{"firstName": f"N{i}", "companyAccount": "Acme"} for i in range(3)],
            Decimal("2.5"),
            Decimal(3),
            id="enrich",
        ),
    ],
)
async def test_charge_not_covered_answers_402_and_changes_nothing(
    db: Database,
    api: httpx.AsyncClient,
    kind: str,
    contacts: list[dict[str, Any]],
    credits: Decimal,
    need: Decimal,
) -> None:
    owner = await make_tenant(db, SECRET, credits=credits)
    rows_before = await ledger_rows(db, owner.client_id)
    response = await submit(api, owner, contacts, kind=kind)
    assert response.status_code == 402, response.text
    body = response.json()
    assert set(body) == {"error"}
    stated = {Decimal(n) for n in re.findall(r"\d+(?:\.\d+)?", body["error"])}
    assert {need, credits} <= stated, body["error"]
    assert await job_ids(api, owner) == []
    assert await balance(api, owner) == credits
    assert await ledger_rows(db, owner.client_id) == rows_before


async def test_exact_balance_is_enough(db: Database, api: httpx.AsyncClient) -> None:
    owner = await make_tenant(db, SECRET, credits=Decimal("0.15"))
    response = await submit(api, owner, many_contacts(3))
    assert response.status_code == 200, response.text
    assert amount(response.json()["credits"]["creditsRemaining"]) == 0
    assert await balance(api, owner) == await ledger_sum(db, owner.client_id) == 0


async def test_submission_of_only_rejected_records_needs_no_credits(
    db: Database, api: httpx.AsyncClient
) -> None:
    owner = await make_tenant(db, SECRET, credits=0)
    response = await submit(api, owner, [contact(phone="123"), contact(first="")])
    assert response.status_code == 200, response.text
    assert response.json()["credits"]["creditsCharged"] == 0
    assert response.json()["data"]["jobId"] is None
    assert await ledger_rows(db, owner.client_id) == 0


# -- D9 under concurrency --------------------------------------------------------------------------


async def test_concurrent_submissions_never_overdraw(db: Database, api: httpx.AsyncClient) -> None:
    # Each submission has two contacts with one valid phone each: 0.10 credits.
    # 0.70 covers seven of the twenty.
    initial = Decimal("0.7")
    owner = await make_tenant(db, SECRET, plan="enterprise", credits=initial)
    responses = await asyncio.gather(
        *(submit(api, owner, many_contacts(2, start=2 * i)) for i in range(20))
    )
    statuses = [r.status_code for r in responses]
    accepted = [r for r in responses if r.status_code == 200]
    assert len(accepted) <= 7, statuses
    assert all(code in (200, 402) for code in statuses), statuses
    charged = sum((amount(r.json()["credits"]["creditsCharged"]) for r in accepted), Decimal(0))
    final = await balance(api, owner)
    assert final >= 0
    assert final == initial - charged
    assert await ledger_sum(db, owner.client_id) == final
    assert await ledger_rows(db, owner.client_id) == 1 + len(accepted)
    assert await jobs_of_client(db, owner.client_id) == len(accepted)
    # D9 refuses only what the balance cannot cover: all seven affordable ones are taken.
    assert len(accepted) == 7, statuses


# -- D10: Idempotency-Key ------------------------------------------------------------------------


async def test_same_key_and_body_replays_first_response(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = {"contacts": [contact(), contact(first="")], "name": "retry me"}
    first = await post(api, tenant, body, key="order-1")
    assert first.status_code == 200, first.text
    assert REPLAYED not in first.headers
    second = await post(api, tenant, body, key="order-1")
    assert second.status_code == 200, second.text
    assert second.headers.get(REPLAYED) == "true"
    assert second.json() == first.json()
    assert await job_ids(api, tenant) == [first.json()["data"]["jobId"]]
    assert await balance(api, tenant) == Decimal("999.95")
    assert await ledger_rows(db, tenant.client_id) == 2


@pytest.mark.parametrize("kind", ["score", "enrich"])
async def test_same_key_replays_on_both_endpoints(
    api: httpx.AsyncClient, tenant: Tenant, kind: str
) -> None:
    body = {"contacts": [contact(companyAccount="Acme")]}
    first = await post(api, tenant, body, key="k", kind=kind)
    second = await post(api, tenant, body, key="k", kind=kind)
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.json()["data"]["jobId"] == first.json()["data"]["jobId"]
    assert second.headers.get(REPLAYED) == "true"
    assert len(await job_ids(api, tenant)) == 1


async def test_key_of_a_scoring_answers_a_fresh_enrichment(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    """P76: the same key and body sent to score and then to enrich are two requests, each
    answered for its own operation, each replayed only by its own operation."""
    body = {"contacts": [contact(companyAccount="Acme")]}
    scored = await post(api, tenant, body, key="shared", kind="score")
    assert scored.status_code == 200, scored.text
    enriched = await post(api, tenant, body, key="shared", kind="enrich")
    assert enriched.status_code == 200, enriched.text
    assert REPLAYED not in enriched.headers
    job_id = enriched.json()["data"]["jobId"]
    assert job_id not in (None, scored.json()["data"]["jobId"])
    assert enriched.json()["credits"] == {
        "creditsCharged": 1,
        "creditsRemaining": 998.95,
        "costPerContact": 1,
        "contactCount": 1,
    }
    async with db.read() as session:
        job = await session.get(Job, job_id)
    assert job is not None and job.job_type == "enrich_and_score"
    assert await ledger_rows(db, tenant.client_id) == 3
    again = await post(api, tenant, body, key="shared", kind="enrich")
    assert again.headers.get(REPLAYED) == "true"
    assert again.json() == enriched.json()
    assert sorted(await job_ids(api, tenant)) == sorted([scored.json()["data"]["jobId"], job_id])


async def test_same_key_with_other_body_answers_409(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    first = await post(api, tenant, {"contacts": [contact()]}, key="order-2")
    assert first.status_code == 200, first.text
    other = await post(api, tenant, {"contacts": [contact("Bob", "Ray")]}, key="order-2")
    assert other.status_code == 409, other.text
    assert set(other.json()) == {"error"}
    assert isinstance(other.json()["error"], str)
    assert await job_ids(api, tenant) == [first.json()["data"]["jobId"]]
    assert await balance(api, tenant) == Decimal("999.95")
    assert await ledger_rows(db, tenant.client_id) == 2


async def test_requests_without_key_are_not_deduplicated(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    body = {"contacts": [contact()]}
    first = await post(api, tenant, body)
    second = await post(api, tenant, body)
    assert REPLAYED not in second.headers
    assert first.json()["data"]["jobId"] != second.json()["data"]["jobId"]
    assert len(await job_ids(api, tenant)) == 2


async def test_same_key_from_another_user_is_independent(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    body = {"contacts": [contact()]}
    mine = await post(api, tenant, body, key="shared-key")
    theirs = await post(api, colleague, body, key="shared-key")
    assert (mine.status_code, theirs.status_code) == (200, 200)
    assert REPLAYED not in theirs.headers
    assert theirs.json()["data"]["jobId"] != mine.json()["data"]["jobId"]
    assert await job_ids(api, tenant) == [mine.json()["data"]["jobId"]]
    assert await job_ids(api, colleague) == [theirs.json()["data"]["jobId"]]
    assert await balance(api, tenant) == Decimal("999.9")


async def test_concurrent_requests_with_same_key_make_one_job(
    db: Database, api: httpx.AsyncClient
) -> None:
    owner = await make_tenant(db, SECRET, plan="enterprise", credits=10)
    body = {"contacts": many_contacts(5)}
    responses = await asyncio.gather(*(post(api, owner, body, key="burst") for _ in range(8)))
    assert [r.status_code for r in responses] == [200] * 8, [r.text for r in responses]
    assert len({r.json()["data"]["jobId"] for r in responses}) == 1
    assert sum(1 for r in responses if r.headers.get(REPLAYED) == "true") == 7
    assert await jobs_of_client(db, owner.client_id) == 1
    assert await balance(api, owner) == Decimal("9.75")
    assert await ledger_rows(db, owner.client_id) == 2


async def _age_key(db: Database, user_id: str, key: str, age: timedelta) -> None:
    async with db.unit_of_work() as session:
        result = await session.execute(
            update(IdempotencyRecord)
            .where(IdempotencyRecord.user_id == user_id, IdempotencyRecord.key == key)
            .values(created_at=utcnow() - age)
        )
        assert getattr(result, "rowcount", 0) == 1


@pytest.mark.parametrize(("hours", "replayed"), [(23, True), (25, False)])
async def test_key_is_replayed_for_24_hours_only(
    db: Database, api: httpx.AsyncClient, tenant: Tenant, hours: int, replayed: bool
) -> None:
    body = {"contacts": [contact()]}
    first = await post(api, tenant, body, key="daily")
    assert first.status_code == 200, first.text
    await _age_key(db, tenant.user_id, "daily", timedelta(hours=hours))
    again = await post(api, tenant, body, key="daily")
    assert again.status_code == 200, again.text
    assert (again.headers.get(REPLAYED) == "true") is replayed
    same_job = again.json()["data"]["jobId"] == first.json()["data"]["jobId"]
    assert same_job is replayed
    assert len(await job_ids(api, tenant)) == (1 if replayed else 2)
    expected = Decimal("999.95") if replayed else Decimal("999.9")
    assert await balance(api, tenant) == await ledger_sum(db, tenant.client_id) == expected


async def test_expired_key_can_be_reused_with_another_body(
    db: Database, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    first = await post(api, tenant, {"contacts": [contact()]}, key="old")
    assert first.status_code == 200, first.text
    await _age_key(db, tenant.user_id, "old", timedelta(hours=25))
    other = await post(api, tenant, {"contacts": [contact("Bob", "Ray")]}, key="old")
    assert other.status_code == 200, other.text
    assert REPLAYED not in other.headers
    assert len(await job_ids(api, tenant)) == 2


async def test_service_honours_given_idempotency_ttl(db: Database, tenant: Tenant) -> None:
    async with db.read() as session:
        principal = await accounts.authenticate(
            session,
            secret=SECRET,
            authorization=f"Bearer {tenant.api_key}",
            now=utcnow(),
        )
    body = {"contacts": [contact()]}
    start = utcnow()
    fingerprint = idempotency.request_hash(body, "contacts/score")
    once = idempotency.Once(
        principal.user_id, "contacts/score", "ttl", fingerprint, timedelta(minutes=5)
    )
    outcomes = []
    for at in (start, start + timedelta(minutes=4), start + timedelta(minutes=6)):

        async def answer(at: datetime = at) -> dict[str, Any]:
            submission = await submissions.submit(
                session,
                principal=principal,
                kind="scoring",
                contacts=body["contacts"],
                scoring_type="lightning",
                name=None,
                now=at,
            )
            return {"data": {"jobId": submission.opened.job_id}}

        async with db.write() as session:
            response, replayed = await idempotency.answer_once(session, once, now=at, answer=answer)
        outcomes.append((response["data"]["jobId"], replayed))
    (first_job, first_replayed), (second_job, second_replayed), (third_job, third_replayed) = (
        outcomes
    )
    assert (first_replayed, second_replayed, third_replayed) == (False, True, False)
    assert second_job == first_job
    assert third_job != first_job
    assert await jobs_of_client(db, tenant.client_id) == 2
