"""Version 1 job reads: the same jobs as version 2, with the same scoping, parameters and
errors; a job made through one version reads through the other."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from fastapi import FastAPI

from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.support import V2, Tenant, add_user, assert_error, make_tenant, many_contacts, settle

JOBS = "/api/jobs"


async def v1_submit(api: httpx.AsyncClient, tenant: Tenant, contacts: list[Any]) -> str:
    response = await api.post(
        "/api/contacts/score", json={"contacts": contacts}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    job_id: str = response.json()["data"]["jobId"]
    return job_id


async def v2_submit(api: httpx.AsyncClient, tenant: Tenant, contacts: list[Any]) -> str:
    response = await api.post(
        f"{V2}/contacts/score", json={"contacts": contacts}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    job_id: str = response.json()["data"]["jobId"]
    return job_id


async def test_a_v1_job_reads_through_v2_with_its_contacts(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    job_id = await v1_submit(api, tenant, many_contacts(3))
    await settle(app)
    job = await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)
    assert job.status_code == 200, job.text
    assert job.json()["data"]["jobType"] == "scoring"
    assert job.json()["data"]["status"] == "Finalized"
    listed = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    assert listed.status_code == 200, listed.text
    contacts = listed.json()["data"]["contacts"]
    assert [c["lastName"] for c in contacts] == ["Last0", "Last1", "Last2"]
    assert all(c["jobId"] == job_id and c["phones"][0]["status"] for c in contacts)
    # The v1 read of the same job is the v2 read.
    v1 = await api.get(f"{JOBS}/{job_id}", headers=tenant.headers)
    assert v1.status_code == 200, v1.text
    assert v1.json() == job.json()


async def test_a_v2_job_reads_through_v1_and_both_lists_agree(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    older = await v1_submit(api, tenant, many_contacts(1))
    newer = await v2_submit(api, tenant, many_contacts(2, start=10))
    await settle(app)
    one = await api.get(f"{JOBS}/{newer}", headers=tenant.headers)
    assert one.status_code == 200, one.text
    job = one.json()["data"]
    assert (job["id"], job["jobType"], job["jobSource"]) == (newer, "lightning_scoring", "api")
    assert (job["acceptedRecordCount"], job["status"]) == (2, "Finalized")
    assert set(job) >= {"id", "clientId", "userId", "status", "createdAt", "jobSource", "name"}

    v1 = await api.get(JOBS, headers=tenant.headers)
    v2 = await api.get(f"{V2}/jobs", headers=tenant.headers)
    assert v1.status_code == 200, v1.text
    assert v1.json() == v2.json()
    data = v1.json()["data"]
    assert [j["id"] for j in data["jobs"]] == [newer, older]
    assert {j["jobType"] for j in data["jobs"]} == {"scoring", "lightning_scoring"}
    assert data["pagination"] == {
        "page": 1,
        "perPage": 100,
        "totalCount": 2,
        "totalPages": 1,
        "hasNextPage": False,
        "hasPreviousPage": False,
    }


async def test_list_parameters_are_those_of_version_2(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    for _ in range(3):
        await v1_submit(api, tenant, many_contacts(1))
    page = await api.get(JOBS, params={"page": 2, "limit": 2}, headers=tenant.headers)
    assert page.status_code == 200, page.text
    assert len(page.json()["data"]["jobs"]) == 1
    assert page.json()["data"]["pagination"]["totalPages"] == 2
    assert page.json()["data"]["pagination"]["hasPreviousPage"] is True
    from_app = await api.get(JOBS, params={"source": "app"}, headers=tenant.headers)
    assert from_app.json()["data"]["jobs"] == []
    from_api = await api.get(JOBS, params={"source": "api"}, headers=tenant.headers)
    assert len(from_api.json()["data"]["jobs"]) == 3
    for params in ({"limit": 0}, {"limit": 1001}, {"page": 0}, {"source": "web"}):
        assert_error(await api.get(JOBS, params=params, headers=tenant.headers), 400)


async def test_another_users_job_is_404_and_a_malformed_id_400(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    job_id = await v1_submit(api, tenant, many_contacts(1))
    colleague = await add_user(db, SECRET, tenant, "colleague@acme.com")
    stranger = await make_tenant(db, SECRET, name="Other Co")
    for other in (colleague, stranger):
        assert assert_error(await api.get(f"{JOBS}/{job_id}", headers=other.headers), 404) == (
            "job not found"
        )
        listed = await api.get(JOBS, headers=other.headers)
        assert listed.json()["data"]["jobs"] == []
    unknown = str(uuid.uuid4())
    assert_error(await api.get(f"{JOBS}/{unknown}", headers=tenant.headers), 404)
    assert "jobId" in assert_error(await api.get(f"{JOBS}/not-a-uuid", headers=tenant.headers), 400)
    # The owner still reads it.
    assert (await api.get(f"{JOBS}/{job_id}", headers=tenant.headers)).status_code == 200
