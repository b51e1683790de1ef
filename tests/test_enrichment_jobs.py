"""Enrichment jobs end to end: the directory and the client's history find new numbers for the
right person, never for a namesake at another company; nothing found means Not Enriched."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from dialscore.enrichment.matching import Person, lookup_keys
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import DirectoryPerson
from tests.conftest import SECRET
from tests.support import V2, Tenant, make_tenant, settle, submit

OWN = "+14155550234"
FOUND_MOBILE = "+12125557188"
FOUND_DIRECT = "+16175552142"


async def add_person(db: Database, record_id: str, phones: list[dict[str, Any]], **kw: str) -> None:
    keys = lookup_keys(Person(**kw))
    async with db.unit_of_work() as session:
        session.add(
            DirectoryPerson(
                id=record_id,
                phones=phones,
                email_key=keys.email,
                linkedin_key=keys.linkedin,
                last_name_key=keys.last_name,
                updated_at=utcnow(),
                **kw,
            )
        )


async def enrich(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant, contacts: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    response = await submit(api, tenant, contacts, kind="enrich")
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)
    job = (await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)).json()["data"]
    listed = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers)
    return job, listed.json()["data"]["contacts"]


async def test_directory_match_appends_new_numbers(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await add_person(
        db,
        "dir-ann",
        [{"number": FOUND_MOBILE, "type": "mobile"}, {"number": OWN, "type": "direct"}],
        first_name="Ann",
        last_name="Lee",
        company="Acme Inc.",
        email="ann.lee@acme.com",
    )
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [{"firstName": "Ann", "lastName": "Lee", "companyAccount": "ACME", "phone": OWN}],
    )
    assert job["status"] == "Finalized"
    (contact,) = contacts
    assert contact["enrichmentContactId"] == "dir-ann"
    # The contact's own number is not added twice (D19).
    assert [(p["number"], p["type"], p["position"]) for p in contact["phones"]] == [
        (OWN, "other", 1),
        (FOUND_MOBILE, "Service Enriched Phone 1", 2),
    ][: len(contact["phones"])]
    assert len(contact["phones"]) == 2
    assert all(p["status"] for p in contact["phones"])


async def test_a_namesake_at_another_company_is_never_matched(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await add_person(
        db,
        "dir-other-ann",
        [{"number": FOUND_MOBILE, "type": "mobile"}],
        first_name="Ann",
        last_name="Lee",
        company="Globex Corporation",
    )
    job, contacts = await enrich(
        app, api, tenant, [{"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme"}]
    )
    assert job["status"] == "Not Enriched"
    (contact,) = contacts
    assert contact["enrichmentContactId"] is None
    assert FOUND_MOBILE not in [p["number"] for p in contact["phones"]]


async def test_history_finds_the_same_person_among_the_clients_contacts(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    scored = await submit(
        api,
        tenant,
        [{"firstName": "Robert", "lastName": "Núñez", "companyAccount": "Initech LLC",
          "phone": FOUND_DIRECT}],
    )  # fmt: skip
    assert scored.status_code == 200, scored.text
    await settle(app)
    job, contacts = await enrich(
        app,
        api,
        tenant,
        [{"firstName": "Bob", "lastName": "Nunez", "companyAccount": "Initech"}],
    )
    assert job["status"] == "Finalized", contacts
    (contact,) = contacts
    assert contact["enrichmentContactId"].startswith("contact:")
    assert [p["number"] for p in contact["phones"]] == [FOUND_DIRECT]

    # Another client's contacts are never a source.
    other = await make_tenant(db, SECRET, name="Other", credits=100)
    job, contacts = await enrich(
        app, api, other, [{"firstName": "Bob", "lastName": "Nunez", "companyAccount": "Initech"}]
    )
    assert job["status"] == "Not Enriched"
