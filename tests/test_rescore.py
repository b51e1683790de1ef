"""POST /jobs/{jobId}/rescore: a rescoring job scores a finished job's contacts again with the
evidence known now, is charged like scoring, and delivers its events again."""

from __future__ import annotations

from decimal import Decimal

import httpx
from fastapi import FastAPI
from sqlalchemy import update

from dialscore.accounts import service as accounts
from dialscore.kit.db import Database
from dialscore.models import DncNumber, Job
from tests.conftest import SECRET
from tests.support import (
    V2,
    Tenant,
    add_user,
    assert_error,
    contact,
    job_contacts,
    ledger_sum,
    make_tenant,
    settle,
    submit,
)

MOBILE = "+447400918273"
OTHER = "+442079460958"


async def scored_job(app: FastAPI, api: httpx.AsyncClient, tenant: Tenant) -> str:
    response = await submit(
        api, tenant, [contact("Ann", "Lee", MOBILE), contact("Bo", "Ray", OTHER, phone2=MOBILE)]
    )
    assert response.status_code == 200, response.text
    await settle(app)
    job_id: str = response.json()["data"]["jobId"]
    return job_id


async def test_rescoring_uses_todays_evidence(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    job_id = await scored_job(app, api, tenant)
    before = await job_contacts(api, tenant, job_id)
    assert before[0]["phones"][0]["status"] == "p1"

    async with db.unit_of_work() as session:
        session.add(DncNumber(number=int(MOBILE[1:]), list_name="national"))
    spent = await ledger_sum(db, tenant.client_id)
    response = await api.post(
        f"{V2}/jobs/{job_id}/rescore", json={"name": "again"}, headers=tenant.headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    new_id = body["data"]["jobId"]
    assert new_id != job_id
    assert body["data"]["totalRecordCount"] == body["data"]["acceptedRecordCount"] == 2
    # Three distinct valid numbers across the two contacts, at 0.05 each.
    assert body["credits"]["phoneCount"] == 3
    assert Decimal(str(body["credits"]["creditsCharged"])) == Decimal("0.15")
    assert await ledger_sum(db, tenant.client_id) == spent - Decimal("0.15")
    assert body["error"] is None

    await settle(app)
    job = (await api.get(f"{V2}/jobs/{new_id}", headers=tenant.headers)).json()["data"]
    assert (job["jobType"], job["status"], job["name"]) == ("rescoring", "Finalized", "again")
    after = await job_contacts(api, tenant, new_id)
    assert [c["firstName"] for c in after] == ["Ann", "Bo"]
    assert after[0]["phones"][0]["status"] == "p1 - dnc"
    assert any("do-not-call" in reason for reason in after[0]["phones"][0]["reasons"])
    assert after[1]["phones"][1]["status"] == "p1 - dnc"
    assert after[1]["bestPhone"]["number"] == OTHER  # a listed number is never the best
    # The original job is left as it was.
    assert (await job_contacts(api, tenant, job_id)) == before


async def test_rescore_refusals(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    job_id = await scored_job(app, api, tenant)
    path = f"{V2}/jobs/{job_id}/rescore"
    assert_error(await api.post(path), 401)
    other = await make_tenant(db, SECRET, name="Other")
    assert_error(await api.post(path, headers=other.headers), 404)
    colleague = await add_user(db, SECRET, tenant, "colleague@example.com")
    assert_error(await api.post(path, headers=colleague.headers), 404)
    assert_error(await api.post(f"{V2}/jobs/not-a-uuid/rescore", headers=tenant.headers), 400)
    assert_error(await api.post(path, json={"name": ""}, headers=tenant.headers), 400)
    assert_error(await api.post(path, json=[1], headers=tenant.headers), 400)

    async with db.unit_of_work() as session:
        await session.execute(update(Job).where(Job.id == job_id).values(status="Processing"))
    assert_error(await api.post(path, headers=tenant.headers), 409)
    async with db.unit_of_work() as session:
        await session.execute(update(Job).where(Job.id == job_id).values(status="Finalized"))

    spent = await ledger_sum(db, tenant.client_id)
    async with db.unit_of_work() as session:
        await accounts.charge(
            session,
            client_id=tenant.client_id,
            user_id=tenant.user_id,
            amount=spent - Decimal("0.10"),
            reason="test",
            job_id=None,
        )
    message = assert_error(await api.post(path, headers=tenant.headers), 402)
    assert "0.15" in message
    assert await ledger_sum(db, tenant.client_id) == Decimal("0.10")
