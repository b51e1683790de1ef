"""A monthly credit limit per API key (P201): a submission that would take the key's spending
this UTC month over its limit answers 402 and creates nothing; the key's spending shows in
GET /account/credits and on the web app's API keys page."""

from __future__ import annotations

import asyncio
import re
from decimal import Decimal

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from dialscore.accounts import service as accounts
from dialscore.kit.db import Database
from dialscore.kit.errors import BadRequest
from dialscore.models import ApiKey, CreditLedgerEntry
from dialscore.signin import service as signin
from tests.conftest import SECRET
from tests.support import V2, Tenant, assert_error, make_tenant, many_contacts, settle, submit
from tests.test_credits import balance, job_ids
from tests.web_forms import PASSWORD, once_token, sign_in


async def limited_key(db: Database, tenant: Tenant, limit: str | None) -> Tenant:
    """Another key of the tenant's user, with a monthly credit limit of ``limit`` credits."""
    async with db.unit_of_work() as session:
        made = await accounts.create_key(
            session,
            user_id=tenant.user_id,
            secret=SECRET,
            monthly_credit_limit=None if limit is None else Decimal(limit),
        )
    return Tenant(tenant.client_id, tenant.user_id, made.api_key, made.key_id)


async def key_figures(api: httpx.AsyncClient, key: Tenant) -> dict[str, object]:
    answer = await api.get(f"{V2}/account/credits", headers=key.headers)
    assert answer.status_code == 200, answer.text
    figures: dict[str, object] = answer.json()["data"]["key"]
    return figures


async def test_a_submission_past_the_keys_monthly_limit_answers_402_and_creates_nothing(
    db: Database, api: httpx.AsyncClient, app: FastAPI
) -> None:
    owner = await make_tenant(db, SECRET, credits=100)
    capped = await limited_key(db, owner, "0.25")  # five phones at 0.05
    assert await key_figures(api, capped) == {"monthlyCreditLimit": 0.25, "spentThisMonth": 0}

    assert (await submit(api, capped, many_contacts(4))).status_code == 200
    assert await key_figures(api, capped) == {"monthlyCreditLimit": 0.25, "spentThisMonth": 0.2}
    jobs_before = await job_ids(api, owner)

    message = assert_error(await submit(api, capped, many_contacts(2, start=10)), 402)
    assert "monthly credit limit" in message
    assert {Decimal(n) for n in re.findall(r"\d+(?:\.\d+)?", message)} >= {
        Decimal("0.1"),  # what it needs
        Decimal("0.05"),  # what is left
        Decimal("0.25"),  # the limit
    }, message
    assert await job_ids(api, owner) == jobs_before
    assert await balance(api, owner) == Decimal("99.8")
    assert await key_figures(api, capped) == {"monthlyCreditLimit": 0.25, "spentThisMonth": 0.2}

    # What is left is still spendable; the client's other keys are not limited by it.
    assert (await submit(api, capped, many_contacts(1, start=20))).status_code == 200
    assert (await submit(api, owner, many_contacts(10, start=30))).status_code == 200
    assert await key_figures(api, owner) == {"monthlyCreditLimit": None, "spentThisMonth": 0.5}
    # Each charge's ledger row names its key.
    async with db.read() as session:
        keys = (
            await session.scalars(
                select(CreditLedgerEntry.key_id)
                .where(CreditLedgerEntry.client_id == owner.client_id, CreditLedgerEntry.delta < 0)
                .order_by(CreditLedgerEntry.id)
            )
        ).all()
    assert keys == [capped.key_id, capped.key_id, owner.key_id]
    await settle(app)


async def test_an_estimate_says_what_the_keys_limit_would_leave(
    db: Database, api: httpx.AsyncClient, app: FastAPI
) -> None:
    owner = await make_tenant(db, SECRET, credits=100)
    capped = await limited_key(db, owner, "0.25")
    assert (await submit(api, capped, many_contacts(4))).status_code == 200
    url = f"{V2}/contacts/score/estimate"
    # Two phones would pass the limit by 0.05: the estimate says so, the submission is refused.
    two = {"contacts": many_contacts(2, start=10)}
    answer = await api.post(url, json=two, headers=capped.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["credits"]["keyCreditsLeftThisMonth"] == -0.05
    assert (await submit(api, capped, two["contacts"])).status_code == 402
    # One phone spends exactly what is left.
    one = {"contacts": many_contacts(1, start=10)}
    answer = await api.post(url, json=one, headers=capped.headers)
    assert answer.json()["credits"]["keyCreditsLeftThisMonth"] == 0
    assert (await submit(api, capped, one["contacts"])).status_code == 200
    await settle(app)


async def test_a_new_month_starts_the_count_again(
    db: Database, api: httpx.AsyncClient, app: FastAPI
) -> None:
    owner = await make_tenant(db, SECRET, credits=100)
    capped = await limited_key(db, owner, "0.1")
    assert (await submit(api, capped, many_contacts(2))).status_code == 200
    assert (await submit(api, capped, many_contacts(1, start=5))).status_code == 402
    # The count was of last month (as a charge made on the last day of it leaves it).
    async with db.unit_of_work() as session:
        await session.execute(
            update(ApiKey).where(ApiKey.id == capped.key_id).values(spent_month="2000-01")
        )
    assert await key_figures(api, capped) == {"monthlyCreditLimit": 0.1, "spentThisMonth": 0}
    assert (await submit(api, capped, many_contacts(1, start=5))).status_code == 200
    assert await key_figures(api, capped) == {"monthlyCreditLimit": 0.1, "spentThisMonth": 0.05}
    await settle(app)


async def test_concurrent_submissions_never_take_a_key_past_its_limit(
    db: Database, api: httpx.AsyncClient, app: FastAPI
) -> None:
    owner = await make_tenant(db, SECRET, credits=100)
    capped = await limited_key(db, owner, "0.15")  # three submissions of one phone
    answers = await asyncio.gather(
        *(submit(api, capped, many_contacts(1, start=i)) for i in range(8))
    )
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] * 3 + [402] * 5, statuses
    assert await key_figures(api, capped) == {"monthlyCreditLimit": 0.15, "spentThisMonth": 0.15}
    assert await balance(api, owner) == Decimal("99.85")
    await settle(app)


async def test_a_key_limited_to_nothing_may_read_but_not_spend(
    db: Database, api: httpx.AsyncClient
) -> None:
    owner = await make_tenant(db, SECRET)
    reader = await limited_key(db, owner, "0")
    assert_error(await submit(api, reader, many_contacts(1)), 402)
    # A submission that charges nothing (every record rejected) is not refused.
    nothing = await submit(api, reader, [{"firstName": "No", "phone": "+14155550100"}])
    assert nothing.status_code == 200, nothing.text
    assert (await api.get(f"{V2}/jobs", headers=reader.headers)).status_code == 200


@pytest.mark.parametrize("bad", ["-1", "1.00001", "NaN", "2000000000"])
async def test_a_limit_that_is_not_a_number_of_credits_is_refused(db: Database, bad: str) -> None:
    owner = await make_tenant(db, SECRET)
    with pytest.raises(BadRequest, match="monthly credit limit"):
        await limited_key(db, owner, bad)


async def test_the_key_form_sets_a_limit_and_the_list_shows_the_spending(
    db: Database, api: httpx.AsyncClient, app: FastAPI
) -> None:
    owner = await make_tenant(db, SECRET, credits=100)
    async with db.unit_of_work() as session:
        admin = await signin.set_password(session, user_id=owner.user_id, password=PASSWORD)
    token = await sign_in(api, admin.email)

    sent = {
        "label": "Dialer",
        "monthly_limit": "lots",
        "csrf_token": token,
        "once": await once_token(api, "/app/keys"),
    }
    refused = await api.post("/app/keys", data=sent)
    assert refused.status_code == 400
    assert "Enter a number of credits" in refused.text

    sent["monthly_limit"] = "1,500"
    made = await api.post("/app/keys", data=sent)
    assert made.status_code == 200, made.text
    async with db.read() as session:
        key = await session.scalar(
            select(ApiKey).where(ApiKey.client_id == owner.client_id, ApiKey.label == "Dialer")
        )
    assert key is not None and key.monthly_credit_limit == Decimal(1500)
    page = await api.get("/app/keys")
    row = next(r for r in page.text.split("<tr>") if "Dialer" in r)
    assert "0 of 1,500 credits" in row
    assert "credits (no limit)" in page.text  # the tenant's first key
