"""Estimates before spending (P200): POST /contacts/score/estimate and /contacts/enrich/estimate
answer what the submission would, with no job, nothing charged and never 402."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.support import V2, assert_error, contact, make_tenant, many_contacts, settle, submit
from tests.test_credits import balance, job_ids, ledger_rows

# Two accepted contacts with three distinct valid numbers, one duplicate number, a contact
# without a last name and one with no valid number: each rule shows in the answer.
SCORED = [
    contact("Ann", "Lee", "+14155552671", phone2="+12125550143"),
    contact("Bo", "Ray", "+13054719862", phone2="+14155552671"),
    {"firstName": "Cy", "phone": "+14155550100"},
    contact("Di", "Fox", "not a number"),
]
ENRICHED = [
    {"firstName": "Dana", "lastName": "Whitfield", "companyAccount": "Northwind"},
    {"firstName": "Eli", "lastName": "Moss", "companyAccount": "Northwind"},
    {"firstName": "Priya", "lastName": "Raman"},
]


def without_job(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "data": {**answer["data"], "jobId": None, "estimate": True}}


@pytest.mark.parametrize(("kind", "contacts"), [("score", SCORED), ("enrich", ENRICHED)])
async def test_an_estimate_is_the_submissions_answer_without_the_job(
    db: Database, api: httpx.AsyncClient, app: FastAPI, kind: str, contacts: list[Any]
) -> None:
    owner = await make_tenant(db, SECRET, credits=100)
    rows_before = await ledger_rows(db, owner.client_id)

    estimated = await api.post(
        f"{V2}/contacts/{kind}/estimate", json={"contacts": contacts}, headers=owner.headers
    )
    assert estimated.status_code == 200, estimated.text
    # Nothing created, nothing charged.
    assert await job_ids(api, owner) == []
    assert await balance(api, owner) == 100
    assert await ledger_rows(db, owner.client_id) == rows_before

    submitted = await submit(api, owner, contacts, kind=kind)
    assert submitted.status_code == 200, submitted.text
    assert submitted.json()["data"]["jobId"] is not None
    answer = estimated.json()
    # A key without a monthly limit (P201): nothing to say of it.
    assert answer["credits"].pop("keyCreditsLeftThisMonth") is None
    assert answer == without_job(submitted.json())
    assert answer["error"]["rejectedRecordCount"] >= 1
    await settle(app)


async def test_an_estimate_the_balance_would_not_cover_says_so_instead_of_402(
    db: Database, api: httpx.AsyncClient
) -> None:
    owner = await make_tenant(db, SECRET, credits=Decimal("0.1"))
    body = {"contacts": many_contacts(3)}
    estimated = await api.post(f"{V2}/contacts/score/estimate", json=body, headers=owner.headers)
    assert estimated.status_code == 200, estimated.text
    credits = estimated.json()["credits"]
    assert (credits["creditsCharged"], credits["creditsRemaining"]) == (0.15, -0.05)
    assert credits["phoneCount"] == 3
    assert (await submit(api, owner, many_contacts(3))).status_code == 402
    assert await balance(api, owner) == Decimal("0.1")


async def test_an_estimate_refuses_what_the_submission_refuses(
    db: Database, api: httpx.AsyncClient
) -> None:
    owner = await make_tenant(db, SECRET)  # the team plan: no core scoring
    bodies: list[tuple[Any, int]] = [
        ({"contacts": many_contacts(1), "scoringType": "core"}, 403),
        ({"contacts": "all"}, 400),
        ({"contacts": many_contacts(1001)}, 400),
        ({"contacts": many_contacts(1), "scoringType": "fast"}, 400),
    ]
    for body, status in bodies:
        estimated = await api.post(
            f"{V2}/contacts/score/estimate", json=body, headers=owner.headers
        )
        submitted = await api.post(f"{V2}/contacts/score", json=body, headers=owner.headers)
        assert assert_error(estimated, status) == assert_error(submitted, status)
    unsigned = await api.post(f"{V2}/contacts/score/estimate", json=bodies[0][0])
    assert_error(unsigned, 401)
    assert await job_ids(api, owner) == []


async def test_the_estimates_are_documented_as_extensions(api: httpx.AsyncClient) -> None:
    document = (await api.get("/openapi.json")).json()
    for kind in ("score", "enrich"):
        operation = document["paths"][f"{V2}/contacts/{kind}/estimate"]["post"]
        assert operation["description"].startswith("Extension (P200)")
        example = operation["responses"]["200"]["content"]["application/json"]["example"]
        assert example["data"]["jobId"] is None and example["data"]["estimate"] is True
