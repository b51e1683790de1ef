"""The main path: submit, process, read back."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.support import V2, Tenant, contact, settle, submit


async def test_submission_is_processed_to_finalized(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    response = await submit(api, tenant, [contact(), contact("Bob", "Ray", "+447911123456")])
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)
    job = (await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)).json()["data"]
    assert job["status"] == "Finalized"
    contacts = (await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)).json()
    statuses = [c["leadStatus"] for c in contacts["data"]["contacts"]]
    assert statuses == ["P2", "P1"]
