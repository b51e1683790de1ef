"""Version 1 submissions: the wide contact shape, duplicates counted instead of rejected, the
enrichment rule and the companyInfo shape, on the same jobs, credits and worker as version 2."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from dialscore.enrichment.repository import add_directory_people
from dialscore.identity.keys import Person
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import Contact, Job
from tests.conftest import SECRET
from tests.support import (
    V2,
    Tenant,
    amount,
    assert_error,
    contact,
    job_contacts,
    ledger_sum,
    make_tenant,
    many_contacts,
    settle,
    write_kept_contacts,
)

SCORE = "/api/contacts/score"
ENRICH = "/api/contacts/enrich"
COMPANY_REQUIRED = "companyAccount, linkedInUrl or companyLinkedInUrl is required"
IDENTITY_REQUIRED = "a name, linkedInUrl or email is required"


async def post(
    api: httpx.AsyncClient, tenant: Tenant, path: str, contacts: list[Any], **body: Any
) -> httpx.Response:
    return await api.post(path, json={"contacts": contacts, **body}, headers=tenant.headers)


async def v2_job(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> dict[str, Any]:
    response = await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()["data"]
    return job


async def job_count(db: Database) -> int:
    async with db.read() as session:
        return int(await session.scalar(select(func.count()).select_from(Job)) or 0)


WIDE = {
    "firstName": "Ann",
    "lastName": "Lee",
    "email": "ann.lee@acme.com",
    "title": "VP Sales",
    "leadId": "lead-77",
    "phone": "(415) 555-2671",
    "phoneType": "cell",
    "phone2": "020 7946 0958",
    "phone2Type": "office",
    "phone2Country": "GB",
    "phoneExt": "12",
    "street": "1 Market St",
    "city": "San Francisco",
    "stateProvince": "CA",
    "zipPostalCode": "94105",
    "country": "US",
    "companyAccount": "Acme",
    "website": "acme.com",
    "companyLinkedInUrl": "https://www.linkedin.com/company/acme",
    "companyCountry": "US",
    "companyCity": "San Francisco",
    "numberOfEmployees": 250,
    "annualRevenue": 5_000_000,
    "industry": "Software",
    "contactCrmId": "crm-c-1",
    "accountCrmId": "crm-a-1",
    "databaseContactId": "db-c-1",
    "databaseCompanyId": "db-a-1",
    "customerContactId": "cust-1",
    "fsTotalCalls": 7,
    "unmappedFields": {"segment": "enterprise", "score": 0.7},
}


async def test_score_accepts_the_wide_shape_and_creates_a_scoring_job(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    strings = {**WIDE, "firstName": "Bo", "phone": "+14155550123", "phone2": None}
    strings |= {"numberOfEmployees": "201-500", "annualRevenue": "$1M-$5M"}
    response = await post(api, tenant, SCORE, [WIDE, strings])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["totalRecordCount"] == 2
    assert body["data"]["duplicateCount"] == 0
    assert body["data"]["acceptedRecordCount"] == 2
    assert set(body["data"]) == {
        "totalRecordCount",
        "duplicateCount",
        "acceptedRecordCount",
        "jobId",
    }
    assert body["error"] is None
    # D9: 0.05 per valid distinct phone, three phones.
    assert body["credits"] == {
        "creditsCharged": 0.15,
        "creditsRemaining": 999.85,
        "costPerPhone": 0.05,
        "phoneCount": 3,
    }
    assert await ledger_sum(db, tenant.client_id) == Decimal("999.85")

    job_id = body["data"]["jobId"]
    await settle(app)
    job = await v2_job(api, tenant, job_id)
    assert (job["jobType"], job["scoringType"]) == ("scoring", "lightning")
    assert job["status"] == "Finalized"
    assert job["name"].startswith("scoring ")
    first, second = await job_contacts(api, tenant, job_id)
    # Integers are taken as their decimal text, strings as they are (P4).
    assert (first["numberOfEmployees"], first["annualRevenue"]) == ("250", "5000000")
    assert (second["numberOfEmployees"], second["annualRevenue"]) == ("201-500", "$1M-$5M")
    for name in (
        "leadId",
        "street",
        "city",
        "stateProvince",
        "zipPostalCode",
        "website",
        "companyLinkedInUrl",
        "companyCity",
        "contactCrmId",
        "accountCrmId",
        "databaseContactId",
        "databaseCompanyId",
        "customerContactId",
        "phoneExt",
    ):
        assert first[name] == WIDE[name], name
    assert [(p["number"], p["type"], p["country"]) for p in first["phones"]] == [
        ("+14155552671", "mobile", "US"),
        ("+442079460958", "direct", "GB"),
    ]
    assert all(p["status"] for p in first["phones"])
    assert first["leadStatus"] in {"P1", "P2", "P3", "Needs Attention"}
    # fsTotalCalls is kept with the free fields; callbackUrl is never a field.
    assert first["unmappedFields"] == {"segment": "enterprise", "score": 0.7, "fsTotalCalls": 7}
    assert "callbackUrl" not in first


async def test_duplicates_are_counted_not_accepted_not_charged_and_not_listed(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    ann = contact("Ann", "Lee", "+14155552671")
    same_ann = contact(" ann ", "LEE", "(415) 555-2671")
    bo = contact("Bo", "Chan", "+14155550123")
    no_last = {"firstName": "Cy", "phone": "+14155550124"}
    response = await post(api, tenant, SCORE, [ann, same_ann, bo, no_last, dict(bo)])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["totalRecordCount"] == 5
    assert body["data"]["duplicateCount"] == 2
    assert body["data"]["acceptedRecordCount"] == 2
    # Only the record with a real fault is listed; duplicates are only counted.
    assert body["error"] == {
        "rejectedRecordCount": 1,
        "records": [{**no_last, "rejectedReason": "lastName is required"}],
    }
    assert body["credits"]["phoneCount"] == 2
    assert amount(body["credits"]["creditsCharged"]) == Decimal("0.10")
    assert await ledger_sum(db, tenant.client_id) == Decimal("999.90")
    await settle(app)
    contacts = await job_contacts(api, tenant, body["data"]["jobId"])
    assert [c["firstName"] for c in contacts] == ["Ann", "Bo"]


async def test_score_rejections_use_the_stable_reasons_and_echo_the_input(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    records = [
        {"lastName": "Lee", "phone": "+14155552671", "leadId": "L1"},
        {"firstName": "Ann", "phone": "+14155552671", "fsTotalCalls": 3},
        {"firstName": "Ann", "lastName": "Lee", "phone": "12"},
        {"firstName": "Ann", "lastName": "Lee", "phone": "+14155552671", "title": ["x"]},
        "not an object",
    ]
    response = await post(api, tenant, SCORE, records)
    assert response.status_code == 200, response.text
    body = response.json()
    # P1: nothing accepted, no job, nothing charged.
    assert body["data"] == {
        "totalRecordCount": 5,
        "duplicateCount": 0,
        "acceptedRecordCount": 0,
        "jobId": None,
    }
    assert body["credits"]["creditsCharged"] == 0
    assert body["error"]["rejectedRecordCount"] == 5
    assert body["error"]["records"] == [
        {**records[0], "rejectedReason": "firstName is required"},
        {**records[1], "rejectedReason": "lastName is required"},
        {**records[2], "rejectedReason": "at least one valid phone number is required"},
        {**records[3], "rejectedReason": "title must be a string"},
        {"input": "not an object", "rejectedReason": "each contact must be a JSON object"},
    ]
    assert await job_count(db) == 0


async def test_callback_urls_follow_the_webhook_url_rules(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    """Without the development setting, a callback must be https to a public address; a
    refused URL rejects its record only (literal addresses: no lookup leaves the machine)."""
    records = [
        contact("A", "One", "+14155550101", callbackUrl="http://203.0.113.9/hook"),
        contact("B", "Two", "+14155550102", callbackUrl="https://127.0.0.1/hook"),
        contact("C", "Three", "+14155550103", callbackUrl="https://10.1.2.3/hook"),
        contact("D", "Four", "+14155550104", callbackUrl=42),
        contact("E", "Five", "+14155550105", callbackUrl="https://" + "a" * 2050),
        contact("F", "Six", "+14155550106", callbackUrl="https:///nohost"),
        contact("G", "Seven", "+14155550107", callbackUrl=""),
    ]
    response = await post(api, tenant, SCORE, records)
    assert response.status_code == 200, response.text
    body = response.json()
    reasons = [r["rejectedReason"] for r in body["error"]["records"]]
    assert reasons == [
        "callbackUrl is not allowed: url must use https",
        "callbackUrl is not allowed: host 127.0.0.1 resolves to 127.0.0.1, a loopback address",
        "callbackUrl is not allowed: host 10.1.2.3 resolves to 10.1.2.3, a private address",
        "callbackUrl must be a string",
        "callbackUrl is longer than 2048 characters",
        "callbackUrl is not allowed: url must have a host",
    ]
    assert body["error"]["records"][0]["callbackUrl"] == "http://203.0.113.9/hook"
    # An empty callbackUrl means none.
    assert body["data"]["acceptedRecordCount"] == 1
    await settle_job_without_callbacks(api, db, tenant, body["data"]["jobId"])


async def settle_job_without_callbacks(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, job_id: str
) -> None:
    await write_kept_contacts(db)
    async with db.read() as session:
        urls = await session.scalars(select(Contact.callback_url).where(Contact.job_id == job_id))
        assert urls.all() == [None]


async def test_request_errors_answer_400_and_create_nothing(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    for path in (SCORE, ENRICH):
        assert "'contacts' must not be empty" in assert_error(
            await post(api, tenant, path, []), 400
        )
        assert "at most 1000" in assert_error(
            await post(api, tenant, path, many_contacts(1001)), 400
        )
        assert "'contacts' must be an array" in assert_error(
            await api.post(path, json={"contacts": {}}, headers=tenant.headers), 400
        )
        not_json = await api.post(
            path,
            content=b"{nope",
            headers={**tenant.headers, "Content-Type": "application/json"},
        )
        assert "not valid JSON" in assert_error(not_json, 400)
    assert await job_count(db) == 0


async def test_balance_short_answers_402_and_charges_nothing(
    api: httpx.AsyncClient, db: Database
) -> None:
    poor = await make_tenant(db, SECRET, credits=0, name="Poor")
    message = assert_error(await post(api, poor, SCORE, many_contacts(2)), 402)
    assert "0.1" in message
    assert await job_count(db) == 0
    assert await ledger_sum(db, poor.client_id) == 0


# -- enrichment -----------------------------------------------------------------------------------


async def test_enrich_rule_rejects_with_the_d6_reasons_and_counts_duplicates(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    flat = {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme"}
    nested = {"firstName": "Bo", "lastName": "Chan", "companyInfo": {"companyAccount": "Initech"}}
    by_profile = {"linkedInUrl": "https://www.linkedin.com/in/cy-doe"}
    by_company_page = {
        "email": "dee@globex.com",
        "companyInfo": {"companyLinkedInUrl": "https://www.linkedin.com/company/globex"},
    }
    no_company = {"firstName": "Ed", "lastName": "Fox", "email": "ed@fox.com"}
    empty_info = {"firstName": "Ed", "lastName": "Fox", "companyInfo": {"website": "fox.com"}}
    nobody = {"companyAccount": "Acme", "title": "CTO"}
    bad_info = {"firstName": "Gil", "companyInfo": "Acme"}
    again = {"firstName": " ann", "lastName": "LEE", "companyInfo": {"companyAccount": "acme"}}
    records = [flat, nested, by_profile, by_company_page, no_company, empty_info, nobody]
    response = await post(api, tenant, ENRICH, [*records, bad_info, again])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["totalRecordCount"] == 9
    assert body["data"]["acceptedRecordCount"] == 4
    assert body["data"]["duplicateCount"] == 1
    assert set(body["data"]) == {
        "totalRecordCount",
        "acceptedRecordCount",
        "duplicateCount",
        "jobId",
    }
    # Rejected records echo the element as sent, nested shape included.
    assert body["error"] == {
        "rejectedRecordCount": 4,
        "records": [
            {**no_company, "rejectedReason": COMPANY_REQUIRED},
            {**empty_info, "rejectedReason": COMPANY_REQUIRED},
            {**nobody, "rejectedReason": IDENTITY_REQUIRED},
            {**bad_info, "rejectedReason": "companyInfo must be an object"},
        ],
    }
    # D9: 1 credit per accepted contact.
    assert body["credits"] == {
        "creditsCharged": 4,
        "creditsRemaining": 996,
        "costPerContact": 1,
        "contactCount": 4,
    }
    job = await v2_job(api, tenant, body["data"]["jobId"])
    assert (job["jobType"], job["scoringType"]) == ("enrichment", "lightning")
    await settle(app)


async def add_person(db: Database, record_id: str, phones: list[dict[str, Any]], **kw: str) -> None:
    async with db.unit_of_work() as session:
        await add_directory_people(session, [(record_id, Person(**kw), phones)], utcnow())


async def test_company_info_fills_the_flat_fields_and_the_job_runs_the_waterfall(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    await add_person(
        db,
        "dir-ann",
        [{"number": "+12125557188", "type": "mobile"}],
        first_name="Ann",
        last_name="Lee",
        company="Acme Inc.",
        email="ann.lee@acme.com",
    )
    nested = {
        "firstName": "Ann",
        "lastName": "Lee",
        "phone": "+14155550234",
        "website": "acme.example",
        "companyInfo": {
            "companyAccount": "Acme",
            "website": "acme.com",
            "companyLinkedInUrl": "https://www.linkedin.com/company/acme",
            "companyCountry": "US",
            "companyCity": "New York",
            "numberOfEmployees": 120,
            "annualRevenue": "10M",
            "industry": "Software",
            "ticker": "ACME",
        },
    }
    nobody_knows = {"firstName": "Zed", "lastName": "Quill", "companyAccount": "Nowhere"}
    response = await post(api, tenant, ENRICH, [nested, nobody_knows])
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)
    job = await v2_job(api, tenant, job_id)
    assert (job["jobType"], job["status"]) == ("enrichment", "Finalized")
    ann, zed = await job_contacts(api, tenant, job_id)
    assert ann["companyAccount"] == "Acme"
    # A field the contact gives itself wins over companyInfo.
    assert ann["website"] == "acme.example"
    assert ann["companyLinkedInUrl"] == "https://www.linkedin.com/company/acme"
    assert (ann["companyCountry"], ann["companyCity"]) == ("US", "New York")
    assert (ann["numberOfEmployees"], ann["annualRevenue"], ann["industry"]) == (
        "120",
        "10M",
        "Software",
    )
    assert ann["unmappedFields"] == {"companyInfo": {"ticker": "ACME"}}
    # The same waterfall as version 2: the directory's number is appended and scored.
    assert ann["enrichmentContactId"] == "dir-ann"
    assert [(p["number"], p["type"]) for p in ann["phones"]] == [
        ("+14155550234", "other"),
        ("+12125557188", "Service Enriched Phone 1"),
    ]
    assert all(p["status"] for p in ann["phones"])
    assert zed["rejectedReason"] == "no additional contact data found"


async def test_an_enrichment_job_whose_contacts_all_find_nothing_is_not_enriched(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    response = await post(
        api, tenant, ENRICH, [{"firstName": "Zed", "lastName": "Quill", "companyAccount": "None"}]
    )
    assert response.status_code == 200, response.text
    await settle(app)
    job = await v2_job(api, tenant, response.json()["data"]["jobId"])
    assert (job["jobType"], job["status"]) == ("enrichment", "Not Enriched")
