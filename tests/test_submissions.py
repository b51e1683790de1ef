"""Scoring and enrichment submissions: rejection rules, request limits, plans, job creation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from dialscore.kit.db import Database
from dialscore.models import Client, Job
from tests.conftest import SECRET
from tests.support import (
    V2,
    Tenant,
    amount,
    contact,
    job_contacts,
    ledger_sum,
    make_tenant,
    many_contacts,
    settle,
    submit,
)

FIRST_NAME_REQUIRED = "firstName is required"
LAST_NAME_REQUIRED = "lastName is required"
PHONE_REQUIRED = "at least one valid phone number is required"
DUPLICATE = "duplicate of an earlier contact in this request"
COMPANY_REQUIRED = "companyAccount, linkedInUrl or companyLinkedInUrl is required"
IDENTITY_REQUIRED = "a name, linkedInUrl or email is required"
NO_DATA_FOUND = "no additional contact data found"


async def job_list(api: httpx.AsyncClient, tenant: Tenant) -> list[dict[str, Any]]:
    response = await api.get(f"{V2}/jobs", headers=tenant.headers)
    assert response.status_code == 200, response.text
    jobs: list[dict[str, Any]] = response.json()["data"]["jobs"]
    return jobs


async def balance(api: httpx.AsyncClient, tenant: Tenant) -> Decimal:
    response = await api.get(f"{V2}/account/credits", headers=tenant.headers)
    assert response.status_code == 200, response.text
    return amount(response.json()["data"]["credits"])


async def get_job(api: httpx.AsyncClient, tenant: Tenant, job_id: str) -> dict[str, Any]:
    response = await api.get(f"{V2}/jobs/{job_id}", headers=tenant.headers)
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()["data"]
    return job


def enrich_contact(**fields: Any) -> dict[str, Any]:
    return {"firstName": "Ann", "lastName": "Lee", "companyAccount": "Acme", **fields}


# -- D5: scoring rejection reasons ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        pytest.param(
            {"lastName": "Lee", "phone": "+14155552671"}, FIRST_NAME_REQUIRED, id="no-first"
        ),
        pytest.param(contact(first=""), FIRST_NAME_REQUIRED, id="empty-first"),
        pytest.param(contact(first="   "), FIRST_NAME_REQUIRED, id="blank-first"),
        pytest.param(contact(first=None), FIRST_NAME_REQUIRED, id="null-first"),
        pytest.param(
            {"firstName": "Ann", "phone": "+14155552671"}, LAST_NAME_REQUIRED, id="no-last"
        ),
        pytest.param(contact(last=""), LAST_NAME_REQUIRED, id="empty-last"),
        pytest.param(contact(last=" \t "), LAST_NAME_REQUIRED, id="blank-last"),
        pytest.param({"firstName": "Ann", "lastName": "Lee"}, PHONE_REQUIRED, id="no-phone"),
        pytest.param(contact(phone=""), PHONE_REQUIRED, id="empty-phone"),
        pytest.param(contact(phone="12345"), PHONE_REQUIRED, id="short-phone"),
        pytest.param(contact(phone="not a number"), PHONE_REQUIRED, id="text-phone"),
        pytest.param(
            contact(phone="12345", phone2="555", phone5="+999"), PHONE_REQUIRED, id="all-invalid"
        ),
    ],
)
async def test_scoring_rejection_reason(
    api: httpx.AsyncClient, tenant: Tenant, record: dict[str, Any], reason: str
) -> None:
    good = contact("Bob", "Ray", "+447911123456")
    response = await submit(api, tenant, [good, record])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["acceptedRecordCount"] == 1
    assert body["error"] == {
        "rejectedRecordCount": 1,
        "records": [{**record, "rejectedReason": reason}],
    }


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(contact(), contact(), id="identical"),
        pytest.param(
            contact(phone="+1 (415) 555-2671"), contact(phone="415.555.2671"), id="formatted-e164"
        ),
        pytest.param(contact(phone="+14155552671"), contact(phone="4155552671"), id="no-plus"),
        pytest.param(
            contact(phone="+14155552671", phone2="+447911123456"),
            contact(phone="+44 7911 123456", phone3="(415) 555-2671"),
            id="same-set-other-slots",
        ),
    ],
)
async def test_duplicate_of_earlier_contact_is_rejected(
    api: httpx.AsyncClient, tenant: Tenant, first: dict[str, Any], second: dict[str, Any]
) -> None:
    response = await submit(api, tenant, [first, second])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["acceptedRecordCount"] == 1
    assert body["error"]["records"] == [{**second, "rejectedReason": DUPLICATE}]


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(contact(phone="+14155550123"), id="other-phone"),
        pytest.param(contact(first="Anne"), id="other-first-name"),
        pytest.param(contact(phone2="+447911123456"), id="extra-phone"),
    ],
)
async def test_similar_but_different_contacts_are_not_duplicates(
    api: httpx.AsyncClient, tenant: Tenant, second: dict[str, Any]
) -> None:
    response = await submit(api, tenant, [contact(), second])
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["data"]["acceptedRecordCount"], body["error"]) == (2, None)


@pytest.mark.parametrize("field", ["firstName", "lastName", "title", "email", "phoneExt"])
@pytest.mark.parametrize(("length", "accepted"), [(1000, True), (1001, False)])
async def test_field_longer_than_1000_characters_rejects_record_naming_field(
    api: httpx.AsyncClient, tenant: Tenant, field: str, length: int, accepted: bool
) -> None:
    record = {**contact(), field: "x" * length}
    response = await submit(api, tenant, [record])
    assert response.status_code == 200, response.text
    body = response.json()
    if accepted:
        assert (body["data"]["acceptedRecordCount"], body["error"]) == (1, None)
    else:
        [rejected] = body["error"]["records"]
        assert body["data"]["acceptedRecordCount"] == 0
        assert field in rejected["rejectedReason"]
        assert rejected[field] == "x" * length


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("firstName", {"given": "Ann"}),
        ("title", {"name": "CEO"}),
        ("phone", ["+14155552671"]),
        ("email", True),
    ],
)
async def test_non_string_known_field_rejects_record(
    api: httpx.AsyncClient, tenant: Tenant, field: str, value: Any
) -> None:
    record = {**contact(), field: value}
    response = await submit(api, tenant, [contact("Bob", "Ray", "+447911123456"), record])
    assert response.status_code == 200, response.text
    body = response.json()
    [rejected] = body["error"]["records"]
    assert body["data"]["acceptedRecordCount"] == 1
    assert rejected[field] == value
    assert field in rejected["rejectedReason"]


@pytest.mark.parametrize("element", ["Ann Lee", 42, None, ["Ann", "Lee"], True])
async def test_contacts_element_not_an_object_is_rejected(
    api: httpx.AsyncClient, tenant: Tenant, element: Any
) -> None:
    response = await submit(api, tenant, [contact(), element])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["totalRecordCount"] == 2
    assert body["data"]["acceptedRecordCount"] == 1
    assert body["error"]["rejectedRecordCount"] == 1
    [rejected] = body["error"]["records"]
    assert isinstance(rejected["rejectedReason"], str)
    assert rejected["rejectedReason"].strip()
    assert element in [v for k, v in rejected.items() if k != "rejectedReason"]


async def test_rejected_records_echo_input_fields_in_order(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    bad_one = {
        "firstName": " ",
        "lastName": "Lee",
        "email": "ann@example.com",
        "title": "CTO",
        "companyAccount": "Acme",
        "phone": "+14155552671",
        "phoneType": "mobile",
        "contactCrmId": "crm-1",
        "favouriteColour": "green",
    }
    bad_two = {"firstName": "Cy", "lastName": "Ode", "phone": "000"}
    response = await submit(api, tenant, [bad_one, contact(), bad_two])
    assert response.status_code == 200, response.text
    assert response.json()["error"] == {
        "rejectedRecordCount": 2,
        "records": [
            {**bad_one, "rejectedReason": FIRST_NAME_REQUIRED},
            {**bad_two, "rejectedReason": PHONE_REQUIRED},
        ],
    }


@pytest.mark.parametrize("kind", ["score", "enrich"])
async def test_error_is_null_when_nothing_is_rejected(
    api: httpx.AsyncClient, tenant: Tenant, kind: str
) -> None:
    contacts = [
        enrich_contact(phone="+14155552671"),
        enrich_contact(firstName="Bob", phone="+447911123456"),
    ]
    response = await submit(api, tenant, contacts, kind=kind)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data", "credits", "error"}
    assert body["error"] is None
    assert body["data"]["acceptedRecordCount"] == body["data"]["totalRecordCount"] == 2


async def test_accepted_records_make_a_job_when_others_are_rejected(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    contacts = [contact(), contact(first=""), contact("Bob", "Ray", "+447911123456")]
    response = await submit(api, tenant, contacts)
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert (data["totalRecordCount"], data["acceptedRecordCount"]) == (3, 2)
    assert data["jobId"] is not None
    stored = await job_contacts(api, tenant, data["jobId"])
    assert [(c["firstName"], c["lastName"]) for c in stored] == [("Ann", "Lee"), ("Bob", "Ray")]


async def test_submission_with_every_record_rejected_creates_no_job(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    before = await balance(api, tenant)
    response = await submit(api, tenant, [contact(first=""), contact(phone="123")])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"] == {"totalRecordCount": 2, "acceptedRecordCount": 0, "jobId": None}
    assert body["credits"]["creditsCharged"] == 0
    assert amount(body["credits"]["creditsRemaining"]) == before
    assert body["error"]["rejectedRecordCount"] == 2
    assert await job_list(api, tenant) == []
    assert await balance(api, tenant) == before


# -- D6: enrichment rejection reasons -------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        pytest.param(
            {"firstName": "Ann", "lastName": "Lee", "email": "ann@example.com"},
            COMPANY_REQUIRED,
            id="no-company-or-urls",
        ),
        pytest.param(
            enrich_contact(companyAccount="  ", website="https://acme.example"),
            COMPANY_REQUIRED,
            id="blank-company",
        ),
        pytest.param({"companyAccount": "Acme"}, IDENTITY_REQUIRED, id="company-only"),
        pytest.param(
            {"firstName": "", "lastName": " ", "companyAccount": "Acme", "phone": "+14155552671"},
            IDENTITY_REQUIRED,
            id="blank-names",
        ),
        pytest.param(
            {"companyLinkedInUrl": "https://linkedin.com/company/acme", "title": "CTO"},
            IDENTITY_REQUIRED,
            id="company-url-only",
        ),
    ],
)
async def test_enrichment_rejection_reason(
    api: httpx.AsyncClient, tenant: Tenant, record: dict[str, Any], reason: str
) -> None:
    response = await submit(api, tenant, [enrich_contact(), record], kind="enrich")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["acceptedRecordCount"] == 1
    assert body["error"] == {
        "rejectedRecordCount": 1,
        "records": [{**record, "rejectedReason": reason}],
    }


@pytest.mark.parametrize(
    "record",
    [
        pytest.param({"firstName": "Ann", "companyAccount": "Acme"}, id="first-name-company"),
        pytest.param({"lastName": "Lee", "companyLinkedInUrl": "https://x.example"}, id="last-url"),
        pytest.param({"email": "ann@example.com", "companyAccount": "Acme"}, id="email-company"),
        pytest.param({"linkedInUrl": "https://linkedin.com/in/ann"}, id="linkedin-only"),
    ],
)
async def test_enrichment_accepts_minimal_contacts(
    api: httpx.AsyncClient, tenant: Tenant, record: dict[str, Any]
) -> None:
    response = await submit(api, tenant, [record], kind="enrich")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["data"]["acceptedRecordCount"], body["error"]) == (1, None)


async def test_enrichment_duplicate_is_rejected(api: httpx.AsyncClient, tenant: Tenant) -> None:
    record = enrich_contact(linkedInUrl="https://linkedin.com/in/ann", phone="+14155552671")
    repeat = {**record, "phone": "(415) 555-2671"}
    response = await submit(api, tenant, [record, repeat], kind="enrich")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["acceptedRecordCount"] == 1
    assert body["error"]["records"] == [{**repeat, "rejectedReason": DUPLICATE}]


async def test_credits_block_has_scoring_and_enrichment_forms(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    contacts = [
        enrich_contact(phone="+14155552671"),
        enrich_contact(firstName="Bob", phone="+447911123456"),
    ]
    scoring = (await submit(api, tenant, contacts)).json()["credits"]
    enrichment = (await submit(api, tenant, contacts, kind="enrich")).json()["credits"]
    assert set(scoring) == {"creditsCharged", "creditsRemaining", "costPerPhone", "phoneCount"}
    assert (amount(scoring["costPerPhone"]), scoring["phoneCount"]) == (Decimal("0.05"), 2)
    assert set(enrichment) == {
        "creditsCharged",
        "creditsRemaining",
        "costPerContact",
        "contactCount",
    }
    assert (amount(enrichment["costPerContact"]), enrichment["contactCount"]) == (Decimal(1), 2)


async def test_enrichment_finding_nothing_ends_not_enriched(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    contacts = [
        enrich_contact(),
        enrich_contact(firstName="Bob", linkedInUrl="https://li.example/b"),
    ]
    response = await submit(api, tenant, contacts, kind="enrich")
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    await settle(app)
    assert (await get_job(api, tenant, job_id))["status"] == "Not Enriched"
    stored = await job_contacts(api, tenant, job_id)
    assert [c["rejectedReason"] for c in stored] == [NO_DATA_FOUND, NO_DATA_FOUND]


# -- D7, D8: whole-request failures ---------------------------------------------------------------

TOO_MANY = many_contacts(1001)


@pytest.mark.parametrize("kind", ["score", "enrich"])
@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty-body"),
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b'{"contacts": [', id="truncated-json"),
        pytest.param(b"\xff\xfe\x00garbage", id="not-utf8"),
        pytest.param(b'[{"firstName": "Ann", "lastName": "Lee"}]', id="json-array"),
        pytest.param(b'"contacts"', id="json-string"),
        pytest.param(b"{}", id="missing-contacts"),
        pytest.param(b'{"contacts": null}', id="null-contacts"),
        pytest.param(b'{"contacts": {"firstName": "Ann"}}', id="contacts-object"),
        pytest.param(b'{"contacts": "Ann Lee"}', id="contacts-string"),
        pytest.param(b'{"contacts": []}', id="empty-contacts"),
        pytest.param(b'{"contacts": [{"firstName": NaN}]}', id="nan"),
        pytest.param(b'{"contacts": [{"firstName": -Infinity}]}', id="infinity"),
        pytest.param(b'{"contacts": [{"firstName": 1e400}]}', id="float-overflow"),
    ],
)
async def test_malformed_body_answers_400_and_creates_nothing(
    api: httpx.AsyncClient, tenant: Tenant, kind: str, content: bytes
) -> None:
    before = await balance(api, tenant)
    response = await api.post(
        f"{V2}/contacts/{kind}",
        content=content,
        headers={**tenant.headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert isinstance(body["error"], str)
    assert body["error"]
    assert await job_list(api, tenant) == []
    assert await balance(api, tenant) == before


@pytest.mark.parametrize("kind", ["score", "enrich"])
@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"contacts": TOO_MANY}, id="1001-contacts"),
        pytest.param({"scoringType": "turbo"}, id="unknown-scoring-type"),
        pytest.param({"scoringType": "LIGHTNING"}, id="scoring-type-case"),
        pytest.param({"scoringType": 1}, id="scoring-type-number"),
        pytest.param({"name": 42}, id="name-number"),
        pytest.param({"name": {"text": "Q3"}}, id="name-object"),
        pytest.param({"name": "   "}, id="name-blank"),
    ],
)
async def test_invalid_request_answers_400_and_creates_nothing(
    api: httpx.AsyncClient, tenant: Tenant, kind: str, extra: dict[str, Any]
) -> None:
    before = await balance(api, tenant)
    body = {"contacts": [enrich_contact(phone="+14155552671")], **extra}
    response = await api.post(f"{V2}/contacts/{kind}", json=body, headers=tenant.headers)
    assert response.status_code == 400, response.text
    assert set(response.json()) == {"error"}
    assert isinstance(response.json()["error"], str)
    assert await job_list(api, tenant) == []
    assert await balance(api, tenant) == before


async def test_1000_contacts_are_accepted(api: httpx.AsyncClient, tenant: Tenant) -> None:
    response = await submit(api, tenant, many_contacts(1000))
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert (data["totalRecordCount"], data["acceptedRecordCount"]) == (1000, 1000)


async def _streamed(parts: int, size: int) -> AsyncIterator[bytes]:
    yield b'{"contacts": [{"firstName": "Ann", "lastName": "Lee", "phone": "+14155552671"}'
    for _ in range(parts):
        yield b" " * size
    yield b"]}"


@pytest.mark.parametrize("kind", ["score", "enrich"])
@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
async def test_body_over_10_mib_answers_413(
    api: httpx.AsyncClient, tenant: Tenant, kind: str, streamed: bool
) -> None:
    before = await balance(api, tenant)
    padding = 10 * 1024 * 1024
    content: Any
    if streamed:
        content = _streamed(11, 1024 * 1024)
    else:
        content = (
            b'{"contacts": [{"firstName": "Ann", "lastName": "Lee", "phone": "+14155552671"}'
            + b" " * padding
            + b"]}"
        )
    response = await api.post(
        f"{V2}/contacts/{kind}",
        content=content,
        headers={**tenant.headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 413, response.text
    assert isinstance(response.json()["error"], str)
    assert await job_list(api, tenant) == []
    assert await balance(api, tenant) == before


# -- D4, D8: plans ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "scoring_type", "label"),
    [("score", "core", "core scoring"), ("enrich", "core", "enrichment with core")],
)
async def test_feature_missing_from_plan_answers_403(
    api: httpx.AsyncClient, tenant: Tenant, kind: str, scoring_type: str, label: str
) -> None:
    before = await balance(api, tenant)
    response = await submit(api, tenant, [enrich_contact()], kind=kind, scoringType=scoring_type)
    assert response.status_code == 403, response.text
    assert set(response.json()) == {"error"}
    assert label in response.json()["error"]
    assert await job_list(api, tenant) == []
    assert await balance(api, tenant) == before


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/contacts/score", {"contacts": [contact()]}),
        ("POST", "/contacts/enrich", {"contacts": [contact(companyAccount="Acme")]}),
        ("GET", "/jobs", None),
        ("GET", "/account/credits", None),
        ("GET", "/account/features", None),
    ],
)
async def test_free_plan_has_no_api_access(
    db: Database, api: httpx.AsyncClient, method: str, path: str, body: dict[str, Any] | None
) -> None:
    free = await make_tenant(db, SECRET, plan="free", credits=100)
    response = await api.request(method, f"{V2}{path}", json=body, headers=free.headers)
    assert response.status_code == 403, response.text
    assert set(response.json()) == {"error"}
    assert "api access" in response.json()["error"].lower()


@pytest.mark.parametrize("kind", ["score", "enrich"])
async def test_free_plan_submission_creates_nothing(
    db: Database, api: httpx.AsyncClient, kind: str
) -> None:
    free = await make_tenant(db, SECRET, plan="free", credits=100)
    response = await submit(api, free, [enrich_contact(phone="+14155552671")], kind=kind)
    assert response.status_code == 403, response.text
    async with db.read() as session:
        jobs = await session.scalar(
            select(func.count()).select_from(Job).where(Job.client_id == free.client_id)
        )
        stored_balance = await session.scalar(
            select(Client.credits).where(Client.id == free.client_id)
        )
    assert (jobs, stored_balance) == (0, Decimal(100))
    assert await ledger_sum(db, free.client_id) == Decimal(100)


# -- D7: unknown fields, known fields round-trip ---------------------------------------------------


@pytest.mark.parametrize("kind", ["score", "enrich"])
async def test_unknown_fields_are_kept_in_unmapped_fields(
    api: httpx.AsyncClient, tenant: Tenant, kind: str
) -> None:
    record = enrich_contact(
        phone="+14155552671",
        favouriteColour="green",
        leadScore=87,
        tags=["a", "b"],
        nested={"x": {"y": None}},
        unmappedFields={"crmStage": "MQL", "owner": {"id": 7}},
    )
    response = await submit(api, tenant, [record], kind=kind)
    assert response.status_code == 200, response.text
    [stored] = await job_contacts(api, tenant, response.json()["data"]["jobId"])
    assert stored["unmappedFields"] == {
        "favouriteColour": "green",
        "leadScore": 87,
        "tags": ["a", "b"],
        "nested": {"x": {"y": None}},
        "crmStage": "MQL",
        "owner": {"id": 7},
    }
    assert "favouriteColour" not in stored


SCORING_FIELDS: dict[str, str] = {
    "firstName": "Ann",
    "lastName": "Lee",
    "email": "ann.lee@example.com",
    "phone": "+14155552671",
    "phone2": "+447911123456",
    "phone3": "+33612345678",
    "phone4": "+61412345678",
    "phone5": "+12125550100",
    "phoneExt": "204",
    "phoneType": "direct",
    "phone2Type": "mobile",
    "phone3Type": "mobile",
    "phone4Type": "other",
    "phone5Type": "hq",
    "title": "Head of Sales",
    "companyAccount": "Acme Corp",
    "linkedInUrl": "https://www.linkedin.com/in/annlee",
    "contactCrmId": "003XYZ",
}
ENRICHMENT_FIELDS: dict[str, str] = {
    **SCORING_FIELDS,
    "companyLinkedInUrl": "https://www.linkedin.com/company/acme",
    "website": "https://acme.example",
}


@pytest.mark.parametrize(
    ("kind", "fields"), [("score", SCORING_FIELDS), ("enrich", ENRICHMENT_FIELDS)]
)
async def test_known_input_fields_round_trip(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant, kind: str, fields: dict[str, str]
) -> None:
    response = await submit(api, tenant, [fields], kind=kind)
    assert response.status_code == 200, response.text
    await settle(app)
    [stored] = await job_contacts(api, tenant, response.json()["data"]["jobId"])
    assert {name: stored.get(name) for name in fields} == fields
    assert stored["unmappedFields"] == {}


# -- D11, D13: job type, name, source --------------------------------------------------------------


@pytest.mark.parametrize(
    ("plan", "kind", "scoring_type", "job_type"),
    [
        ("team", "score", None, "lightning_scoring"),
        ("team", "score", "lightning", "lightning_scoring"),
        ("team", "enrich", "lightning", "enrich_and_score"),
        ("team", "enrich", None, "enrich_and_score"),
        ("business", "score", "core", "core_scoring"),
        ("business", "enrich", "core", "enrich_and_core"),
    ],
)
async def test_job_type_source_and_default_name(
    db: Database,
    api: httpx.AsyncClient,
    plan: str,
    kind: str,
    scoring_type: str | None,
    job_type: str,
) -> None:
    owner = await make_tenant(db, SECRET, plan=plan)
    extra = {} if scoring_type is None else {"scoringType": scoring_type}
    response = await submit(api, owner, [enrich_contact(phone="+14155552671")], kind=kind, **extra)
    assert response.status_code == 200, response.text
    job = await get_job(api, owner, response.json()["data"]["jobId"])
    assert (job["jobType"], job["jobSource"]) == (job_type, "api")
    assert job["name"].startswith(f"{job_type} ")


@pytest.mark.parametrize("kind", ["score", "enrich"])
async def test_given_job_name_is_kept(api: httpx.AsyncClient, tenant: Tenant, kind: str) -> None:
    response = await submit(
        api, tenant, [enrich_contact(phone="+14155552671")], kind=kind, name="Q3 conference list"
    )
    assert response.status_code == 200, response.text
    job_id = response.json()["data"]["jobId"]
    assert (await get_job(api, tenant, job_id))["name"] == "Q3 conference list"
    [listed] = await job_list(api, tenant)
    assert (listed["id"], listed["name"], listed["jobSource"]) == (
        job_id,
        "Q3 conference list",
        "api",
    )
