"""Tenancy (D1): jobs belong to the user that made them, credits to the client; foreign ids 404."""

from __future__ import annotations

import uuid

import httpx
from fastapi import FastAPI

from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.support import V2, Tenant, add_user, contact, make_tenant, settle, submit


async def new_job(api: httpx.AsyncClient, tenant: Tenant, first: str = "Ann") -> str:
    response = await submit(api, tenant, [contact(first, "Lee")])
    assert response.status_code == 200, response.text
    job_id: str = response.json()["data"]["jobId"]
    assert job_id
    return job_id


async def listed_ids(api: httpx.AsyncClient, tenant: Tenant, **params: str) -> list[str]:
    response = await api.get(f"{V2}/jobs", headers=tenant.headers, params=params)
    assert response.status_code == 200, response.text
    return [job["id"] for job in response.json()["data"]["jobs"]]


async def balance(api: httpx.AsyncClient, tenant: Tenant) -> float:
    response = await api.get(f"{V2}/account/credits", headers=tenant.headers)
    assert response.status_code == 200, response.text
    value: float = response.json()["data"]["credits"]
    return value


def assert_not_found(response: httpx.Response) -> None:
    assert response.status_code == 404, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert isinstance(body["error"], str)
    assert body["error"]


async def test_other_client_gets_404_for_a_job_and_its_contacts(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    other = await make_tenant(db, SECRET, name="Globex")
    job_id = await new_job(api, tenant)
    await settle(app)

    own = await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)
    assert own.status_code == 200
    assert own.json()["data"]["clientId"] == tenant.client_id
    own_contacts = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert own_contacts.status_code == 200
    assert len(own_contacts.json()["data"]["contacts"]) == 1

    foreign = await api.get(f"{V2}/jobs/{job_id}", headers=other.headers)
    assert_not_found(foreign)
    foreign_contacts = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=other.headers)
    assert_not_found(foreign_contacts)
    foreign_paged = await api.get(
        f"{V2}/jobs/{job_id}/contacts", headers=other.headers, params={"page": 2, "limit": 1}
    )
    assert_not_found(foreign_paged)
    assert "Ann" not in foreign_contacts.text


async def test_a_foreign_job_looks_exactly_like_an_unknown_one(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    other = await make_tenant(db, SECRET, name="Globex")
    job_id = await new_job(api, tenant)
    unknown = str(uuid.uuid4())
    for suffix in ("", "/contacts"):
        foreign = await api.get(f"{V2}/jobs/{job_id}{suffix}", headers=other.headers)
        missing = await api.get(f"{V2}/jobs/{unknown}{suffix}", headers=other.headers)
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
        assert job_id not in foreign.text


async def test_other_client_does_not_list_the_jobs(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    other = await make_tenant(db, SECRET, name="Globex")
    a_jobs = {await new_job(api, tenant, "Ann"), await new_job(api, tenant, "Amy")}
    b_job = await new_job(api, other, "Bob")

    for source in ("all", "api"):
        assert set(await listed_ids(api, tenant, source=source)) == a_jobs
        assert await listed_ids(api, other, source=source) == [b_job]
    response = await api.get(f"{V2}/jobs", headers=other.headers)
    pagination = response.json()["data"]["pagination"]
    assert pagination["totalCount"] == 1
    assert all(job["clientId"] == other.client_id for job in response.json()["data"]["jobs"])


async def test_users_of_one_client_see_only_their_own_jobs(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    member = await add_user(db, SECRET, tenant, "member@example.com")
    admin_job = await new_job(api, tenant, "Ann")
    member_job = await new_job(api, member, "Mia")
    await settle(app)

    assert await listed_ids(api, tenant) == [admin_job]
    assert await listed_ids(api, member) == [member_job]

    for owner, job_id in ((tenant, admin_job), (member, member_job)):
        job = (await api.get(f"{V2}/jobs/{job_id}", headers=owner.headers)).json()["data"]
        assert job["userId"] == owner.user_id
        assert job["clientId"] == tenant.client_id
        contacts = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=owner.headers)
        assert contacts.status_code == 200
        assert all(c["userId"] == owner.user_id for c in contacts.json()["data"]["contacts"])

    # The admin is no exception: the member's job is the member's (D1).
    assert_not_found(await api.get(f"{V2}/jobs/{member_job}", headers=tenant.headers))
    assert_not_found(await api.get(f"{V2}/jobs/{member_job}/contacts", headers=tenant.headers))
    assert_not_found(await api.get(f"{V2}/jobs/{admin_job}", headers=member.headers))
    assert_not_found(await api.get(f"{V2}/jobs/{admin_job}/contacts", headers=member.headers))


async def test_credits_are_shared_by_the_users_of_a_client(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    member = await add_user(db, SECRET, tenant, "member@example.com")
    other = await make_tenant(db, SECRET, name="Globex", credits=500)
    assert await balance(api, tenant) == 1000
    assert await balance(api, member) == 1000

    response = await submit(
        api, member, [contact("Mia", "Ray", "+14155552671", phone2="+447911123456")]
    )
    assert response.status_code == 200, response.text
    credits = response.json()["credits"]
    assert credits["creditsCharged"] == 0.1
    assert credits["creditsRemaining"] == 999.9

    assert await balance(api, member) == 999.9
    assert await balance(api, tenant) == 999.9
    assert await balance(api, other) == 500

    # The admin's submission draws on the same balance.
    response = await submit(api, tenant, [contact()])
    assert response.status_code == 200, response.text
    assert response.json()["credits"]["creditsRemaining"] == 999.85
    assert await balance(api, member) == 999.85
    assert await balance(api, other) == 500


async def test_a_client_cannot_spend_another_clients_credits(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    poor = await make_tenant(db, SECRET, name="Poor", credits=0)
    response = await submit(api, poor, [contact()])
    assert response.status_code == 402, response.text
    assert await balance(api, poor) == 0
    assert await balance(api, tenant) == 1000
    assert await listed_ids(api, poor) == []
