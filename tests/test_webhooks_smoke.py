"""One job's events reach a real receiver, signed, in order."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.webhooks import verify
from tests.conftest import SECRET
from tests.fakes import running_receiver
from tests.support import V2, make_tenant, many_contacts, settle, state_of, submit


@pytest.fixture
def private_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": True})


async def test_job_events_are_signed_and_completed_comes_last(private_settings: Settings) -> None:
    app: FastAPI = create_app(private_settings, run_worker=True)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            tenant = await make_tenant(state_of(app).db, SECRET)
            with running_receiver() as receiver:
                created = await api.post(
                    f"{V2}/webhooks",
                    json={
                        "name": "r",
                        "url": receiver.url,
                        "eventTypes": ["job.contact.scored", "job.completed"],
                    },
                    headers=tenant.headers,
                )
                assert created.status_code == 201, created.text
                secret = created.json()["data"]["secret"]
                response = await submit(api, tenant, many_contacts(20))
                job_id = response.json()["data"]["jobId"]
                await settle(app)
                received = list(receiver.received)
    assert len(received) == 21
    assert all(verify(secret, r.body, r.headers["x-service-signature"]) for r in received)
    kinds = [r.json()["eventType"] for r in received]
    assert kinds[-1] == "job.completed" and kinds.count("job.contact.scored") == 20
    last = received[-1].json()
    assert last["payload"]["jobId"] == job_id and last["payload"]["jobStatus"] == "Finalized"
    assert {r.headers["user-agent"].split("/")[0] for r in received} == {"Service-Webhooks"}
