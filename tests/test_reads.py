"""The read endpoints: jobs, a job's contacts, account, health, and the API's own documents."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from dialscore.accounts import service as accounts
from dialscore.accounts.schemas import Principal
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.submissions import service as submissions
from tests.conftest import SECRET
from tests.support import (
    PHONE_STATUSES,
    V2,
    Tenant,
    assert_error,
    contact,
    make_tenant,
    many_contacts,
    settle,
    state_of,
    submit,
)

PAGINATION_KEYS = {"page", "perPage", "totalCount", "totalPages", "hasNextPage", "hasPreviousPage"}
JOB_KEYS = {"id", "clientId", "userId", "status", "createdAt", "jobSource", "jobType", "name"}
JOB_STATES = {"Init", "Processing", "Finalized", "Not Enriched"}
REQUIRED_CONTACT_KEYS = {"firstName", "lastName", "phone", "companyAccount", "phones"}
PHONE_ENTRY_KEYS = {"number", "status", "type", "country", "region", "position"}
PHONE_TYPES = {"mobile", "direct", "hq", "other"}
SLOTS = ("phone", "phone2", "phone3", "phone4", "phone5")
E164 = re.compile(r"^\+[1-9]\d{1,14}$")
ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
V2_PATHS = {
    f"{V2}/contacts/score",
    f"{V2}/contacts/enrich",
    f"{V2}/jobs",
    f"{V2}/jobs/{{jobId}}",
    f"{V2}/jobs/{{jobId}}/contacts",
    f"{V2}/account/credits",
    f"{V2}/account/features",
}


# -- an application whose worker does not run: jobs stay as they were submitted -----------------


@pytest.fixture
async def idle_app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings, run_worker=False)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
def idle_db(idle_app: FastAPI) -> Database:
    return state_of(idle_app).db


@pytest.fixture
async def idle_api(idle_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=idle_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


# -- helpers ------------------------------------------------------------------------------------


async def principal_of(db: Database, tenant: Tenant) -> Principal:
    async with db.read() as session:
        return await accounts.authenticate(
            session, secret=SECRET, authorization=f"Bearer {tenant.api_key}", now=utcnow()
        )


async def service_job(
    db: Database,
    tenant: Tenant,
    *,
    source: str = "app",
    contacts: list[dict[str, Any]] | None = None,
    now: datetime | None = None,
) -> str:
    """A job submitted through the use case directly, as the dashboard does."""
    principal = await principal_of(db, tenant)
    async with db.unit_of_work() as session:
        submission = await submissions.submit(
            session,
            principal=principal,
            kind="scoring",
            contacts=contacts or [contact()],
            scoring_type="lightning",
            name=None,
            now=now or utcnow(),
            source=source,
        )
    job_id = submission.opened.job_id
    assert job_id
    return job_id


async def api_job(api: httpx.AsyncClient, tenant: Tenant, *contacts: dict[str, Any]) -> str:
    response = await submit(api, tenant, list(contacts) or [contact()])
    assert response.status_code == 200, response.text
    job_id: str = response.json()["data"]["jobId"]
    return job_id


async def get_ok(
    api: httpx.AsyncClient, path: str, tenant: Tenant, **params: Any
) -> dict[str, Any]:
    response = await api.get(path, headers=tenant.headers, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"data"}, body
    data: dict[str, Any] = body["data"]
    return data


def pagination(
    page: int, per_page: int, total: int, pages: int, has_next: bool, has_previous: bool
) -> dict[str, Any]:
    return {
        "page": page,
        "perPage": per_page,
        "totalCount": total,
        "totalPages": pages,
        "hasNextPage": has_next,
        "hasPreviousPage": has_previous,
    }


def assert_iso(value: Any) -> datetime:
    assert isinstance(value, str)
    assert ISO_8601.match(value), value
    parsed = datetime.fromisoformat(value)
    assert parsed.tzinfo is not None, value
    return parsed


def expected_lead_status(phones: list[dict[str, Any]]) -> str:
    """D16, written out independently of the scorer."""
    if not phones:
        return "No Numbers Found"
    if any(p["status"] is None for p in phones):
        return "Uncontacted"
    tiers = {p["status"].split(" - ")[0] for p in phones}
    for tier in ("p1", "p2", "p3"):
        if tier in tiers:
            return tier.upper()
    return "Needs Attention"


def expected_best_phone(phones: list[dict[str, Any]]) -> dict[str, Any] | None:
    """D17: tier, then no modifier > sf > ivr > h, then mobile first, then position."""
    modifiers = {None: 0, "sf": 1, "ivr": 2, "h": 3}
    ranked = []
    for entry in phones:
        status = entry["status"]
        if status is None:
            continue
        tier, _, modifier = status.partition(" - ")
        if tier == "na" or modifier == "dnc":
            continue
        rank = (
            int(tier[1]),
            modifiers[modifier or None],
            0 if entry["type"] == "mobile" else 1,
            entry["position"],
        )
        ranked.append((rank, entry))
    if not ranked:
        return None
    return min(ranked, key=lambda item: item[0])[1]


# -- GET /jobs ----------------------------------------------------------------------------------


async def test_jobs_are_listed_newest_first(api: httpx.AsyncClient, tenant: Tenant) -> None:
    made = [await api_job(api, tenant, contact(f"N{i}", "Lee")) for i in range(3)]
    data = await get_ok(api, f"{V2}/jobs", tenant)
    assert [job["id"] for job in data["jobs"]] == list(reversed(made))
    stamps = [assert_iso(job["createdAt"]) for job in data["jobs"]]
    assert stamps == sorted(stamps, reverse=True)


async def test_jobs_are_ordered_by_creation_time_not_insertion(
    idle_api: httpx.AsyncClient, idle_db: Database
) -> None:
    tenant = await make_tenant(idle_db, SECRET)
    base = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    by_minute = {}
    for minute in (3, 0, 4, 1, 2):
        by_minute[minute] = await service_job(idle_db, tenant, now=base + timedelta(minutes=minute))
    data = await get_ok(idle_api, f"{V2}/jobs", tenant)
    assert [job["id"] for job in data["jobs"]] == [by_minute[m] for m in (4, 3, 2, 1, 0)]
    assert assert_iso(data["jobs"][0]["createdAt"]) == base + timedelta(minutes=4)


async def test_jobs_pagination_first_middle_last_and_past_the_end(
    idle_api: httpx.AsyncClient, idle_db: Database
) -> None:
    tenant = await make_tenant(idle_db, SECRET)
    base = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    made = [await service_job(idle_db, tenant, now=base + timedelta(minutes=i)) for i in range(5)]
    newest_first = list(reversed(made))

    expected = {
        1: (newest_first[0:2], pagination(1, 2, 5, 3, True, False)),
        2: (newest_first[2:4], pagination(2, 2, 5, 3, True, True)),
        3: (newest_first[4:5], pagination(3, 2, 5, 3, False, True)),
        4: ([], pagination(4, 2, 5, 3, False, True)),
    }
    for page, (ids, pages) in expected.items():
        data = await get_ok(idle_api, f"{V2}/jobs", tenant, page=page, limit=2)
        assert set(data) == {"jobs", "pagination"}
        assert [job["id"] for job in data["jobs"]] == ids, page
        assert data["pagination"] == pages, page


async def test_jobs_pagination_on_an_exact_multiple(
    idle_api: httpx.AsyncClient, idle_db: Database
) -> None:
    tenant = await make_tenant(idle_db, SECRET)
    for _ in range(4):
        await service_job(idle_db, tenant)
    data = await get_ok(idle_api, f"{V2}/jobs", tenant, page=2, limit=2)
    assert len(data["jobs"]) == 2
    assert data["pagination"] == pagination(2, 2, 4, 2, False, True)


async def test_jobs_pagination_with_no_jobs(api: httpx.AsyncClient, tenant: Tenant) -> None:
    data = await get_ok(api, f"{V2}/jobs", tenant)
    assert data == {"jobs": [], "pagination": pagination(1, 100, 0, 0, False, False)}
    data = await get_ok(api, f"{V2}/jobs", tenant, page=3, limit=10)
    assert data == {"jobs": [], "pagination": pagination(3, 10, 0, 0, False, True)}


async def test_jobs_default_limit_is_100(idle_api: httpx.AsyncClient, idle_db: Database) -> None:
    tenant = await make_tenant(idle_db, SECRET)
    base = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    made = [await service_job(idle_db, tenant, now=base + timedelta(seconds=i)) for i in range(101)]
    data = await get_ok(idle_api, f"{V2}/jobs", tenant)
    assert len(data["jobs"]) == 100
    assert data["pagination"] == pagination(1, 100, 101, 2, True, False)
    last = await get_ok(idle_api, f"{V2}/jobs", tenant, page=2)
    assert [job["id"] for job in last["jobs"]] == [made[0]]
    assert last["pagination"] == pagination(2, 100, 101, 2, False, True)


@pytest.mark.parametrize("limit", [1, 1000])
async def test_jobs_limit_bounds_are_accepted(
    api: httpx.AsyncClient, tenant: Tenant, limit: int
) -> None:
    await api_job(api, tenant)
    await api_job(api, tenant, contact("Bo", "Ray"))
    data = await get_ok(api, f"{V2}/jobs", tenant, limit=limit)
    assert len(data["jobs"]) == min(limit, 2)
    assert data["pagination"]["perPage"] == limit
    assert data["pagination"]["totalPages"] == (2 if limit == 1 else 1)


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 1001},
        {"limit": -1},
        {"limit": "ten"},
        {"page": 0},
        {"page": -1},
        {"page": "first"},
        {"source": "bogus"},
        {"source": ""},
    ],
    ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()),
)
async def test_jobs_out_of_range_query_is_400(
    api: httpx.AsyncClient, tenant: Tenant, params: dict[str, Any]
) -> None:
    response = await api.get(f"{V2}/jobs", headers=tenant.headers, params=params)
    assert_error(response, 400)


async def test_jobs_source_filter(
    app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    api_jobs = {await api_job(api, tenant), await api_job(api, tenant, contact("Bo", "Ray"))}
    app_job = await service_job(db, tenant, source="app")

    only_api = await get_ok(api, f"{V2}/jobs", tenant, source="api")
    assert {job["id"] for job in only_api["jobs"]} == api_jobs
    assert {job["jobSource"] for job in only_api["jobs"]} == {"api"}
    assert only_api["pagination"]["totalCount"] == 2

    only_app = await get_ok(api, f"{V2}/jobs", tenant, source="app")
    assert [job["id"] for job in only_app["jobs"]] == [app_job]
    assert only_app["jobs"][0]["jobSource"] == "app"
    assert only_app["pagination"]["totalCount"] == 1

    everything = await get_ok(api, f"{V2}/jobs", tenant, source="all")
    assert {job["id"] for job in everything["jobs"]} == {*api_jobs, app_job}
    assert everything["pagination"]["totalCount"] == 3
    default = await get_ok(api, f"{V2}/jobs", tenant)
    # The worker runs meanwhile, so statuses may differ between the two reads; ids may not.
    assert [job["id"] for job in default["jobs"]] == [job["id"] for job in everything["jobs"]]
    assert default["pagination"] == everything["pagination"]

    # Processing does not change where a job came from.
    await settle(app)
    after = await get_ok(api, f"{V2}/jobs", tenant, source="app")
    assert [(job["id"], job["status"]) for job in after["jobs"]] == [(app_job, "Finalized")]


# -- GET /jobs/{jobId} --------------------------------------------------------------------------


async def test_job_has_the_fields_of_the_spec(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    before = utcnow().replace(microsecond=0)
    job_id = await api_job(api, tenant)
    job = await get_ok(api, f"{V2}/jobs/{job_id}", tenant)
    assert set(job) >= JOB_KEYS
    assert job["id"] == job_id
    assert job["clientId"] == tenant.client_id
    assert job["userId"] == tenant.user_id
    assert job["status"] in JOB_STATES
    created = assert_iso(job["createdAt"])
    assert before <= created <= utcnow()
    assert job["jobSource"] == "api"
    assert job["jobType"] == "lightning_scoring"
    # D13: without a name in the request, "<job type> <UTC date-time>".
    assert isinstance(job["name"], str)
    assert job["name"].startswith("lightning_scoring ")

    await settle(app)
    done = await get_ok(api, f"{V2}/jobs/{job_id}", tenant)
    assert done["status"] == "Finalized"
    assert done["createdAt"] == job["createdAt"]
    listed = await get_ok(api, f"{V2}/jobs", tenant)
    assert {k: listed["jobs"][0][k] for k in JOB_KEYS} == {k: done[k] for k in JOB_KEYS}


async def test_job_name_from_the_request(api: httpx.AsyncClient, tenant: Tenant) -> None:
    response = await submit(api, tenant, [contact()], name="Spring campaign")
    assert response.status_code == 200, response.text
    job = await get_ok(api, f"{V2}/jobs/{response.json()['data']['jobId']}", tenant)
    assert job["name"] == "Spring campaign"


@pytest.mark.parametrize("job_id", ["not-a-uuid", "123", "0" * 36])
@pytest.mark.parametrize("suffix", ["", "/contacts"])
async def test_non_uuid_job_id_is_400(
    api: httpx.AsyncClient, tenant: Tenant, job_id: str, suffix: str
) -> None:
    await api_job(api, tenant)
    assert_error(await api.get(f"{V2}/jobs/{job_id}{suffix}", headers=tenant.headers), 400)


@pytest.mark.parametrize("suffix", ["", "/contacts"])
async def test_unknown_job_id_is_404(api: httpx.AsyncClient, tenant: Tenant, suffix: str) -> None:
    await api_job(api, tenant)
    unknown = "3f1c2b9e-8d7a-4c6b-9e5f-1a2b3c4d5e6f"
    assert_error(await api.get(f"{V2}/jobs/{unknown}{suffix}", headers=tenant.headers), 404)


async def test_own_job_id_in_upper_case_is_found(api: httpx.AsyncClient, tenant: Tenant) -> None:
    # UUIDs are case-insensitive on input (RFC 9562); the id is accepted as a UUID, so it
    # must find the caller's job rather than answer 404.
    job_id = await api_job(api, tenant)
    job = await get_ok(api, f"{V2}/jobs/{job_id.upper()}", tenant)
    assert job["id"] == job_id
    contacts = await get_ok(api, f"{V2}/jobs/{job_id.upper()}/contacts", tenant)
    assert len(contacts["contacts"]) == 1


async def test_non_canonical_uuid_of_own_job_is_never_404(
    api: httpx.AsyncClient, tenant: Tenant
) -> None:
    # Either the id is read as the UUID it is (200) or it is refused as malformed (400);
    # telling the owner that its own job does not exist is neither.
    job_id = await api_job(api, tenant)
    answers = {}
    for spelled in (job_id.replace("-", ""), f"{{{job_id}}}", f"urn:uuid:{job_id}"):
        response = await api.get(f"{V2}/jobs/{spelled}", headers=tenant.headers)
        answers[spelled] = response.status_code
        if response.status_code == 200:
            assert response.json()["data"]["id"] == job_id
        elif response.status_code == 400:
            assert_error(response, 400)
    assert set(answers.values()) <= {200, 400}, answers


# -- GET /jobs/{jobId}/contacts -----------------------------------------------------------------


async def test_contacts_pagination_and_submission_order(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    submitted = list(reversed(many_contacts(5)))  # order not alphabetical on purpose
    job_id = await api_job(api, tenant, *submitted)
    await settle(app)
    path = f"{V2}/jobs/{job_id}/contacts"
    names = [c["firstName"] for c in submitted]

    expected = {
        1: (names[0:2], pagination(1, 2, 5, 3, True, False)),
        2: (names[2:4], pagination(2, 2, 5, 3, True, True)),
        3: (names[4:5], pagination(3, 2, 5, 3, False, True)),
        4: ([], pagination(4, 2, 5, 3, False, True)),
    }
    for page, (page_names, pages) in expected.items():
        data = await get_ok(api, path, tenant, page=page, limit=2)
        assert set(data) == {"contacts", "pagination"}
        assert [c["firstName"] for c in data["contacts"]] == page_names, page
        assert data["pagination"] == pages, page

    whole = await get_ok(api, path, tenant)
    assert [c["firstName"] for c in whole["contacts"]] == names
    assert [c["phone"] for c in whole["contacts"]] == [c["phone"] for c in submitted]
    assert whole["pagination"] == pagination(1, 100, 5, 1, False, False)


async def test_contacts_default_limit_is_100(
    idle_api: httpx.AsyncClient, idle_db: Database
) -> None:
    tenant = await make_tenant(idle_db, SECRET)
    submitted = many_contacts(101)
    job_id = await service_job(idle_db, tenant, contacts=submitted)
    path = f"{V2}/jobs/{job_id}/contacts"
    first = await get_ok(idle_api, path, tenant)
    assert [c["firstName"] for c in first["contacts"]] == [c["firstName"] for c in submitted[:100]]
    assert first["pagination"] == pagination(1, 100, 101, 2, True, False)
    second = await get_ok(idle_api, path, tenant, page=2)
    assert [c["firstName"] for c in second["contacts"]] == [submitted[100]["firstName"]]
    assert second["pagination"] == pagination(2, 100, 101, 2, False, True)


@pytest.mark.parametrize("limit", [1, 1000])
async def test_contacts_limit_bounds_are_accepted(
    api: httpx.AsyncClient, tenant: Tenant, limit: int
) -> None:
    job_id = await api_job(api, tenant, *many_contacts(3))
    data = await get_ok(api, f"{V2}/jobs/{job_id}/contacts", tenant, limit=limit)
    assert len(data["contacts"]) == min(limit, 3)
    assert data["pagination"] == pagination(1, limit, 3, 3 if limit == 1 else 1, limit == 1, False)


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 1001},
        {"limit": -5},
        {"limit": "all"},
        {"page": 0},
        {"page": -1},
        {"page": "last"},
    ],
    ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()),
)
async def test_contacts_out_of_range_query_is_400(
    api: httpx.AsyncClient, tenant: Tenant, params: dict[str, Any]
) -> None:
    job_id = await api_job(api, tenant)
    response = await api.get(f"{V2}/jobs/{job_id}/contacts", headers=tenant.headers, params=params)
    assert_error(response, 400)


async def test_scored_contact_shape(app: FastAPI, api: httpx.AsyncClient, tenant: Tenant) -> None:
    submitted = [
        contact(
            "Ann",
            "Lee",
            "415-555-2671",  # no country code: read as NANP
            phone2="+44 7400 123456",
            phone3="+61 2 9374 4000",
            title="CTO",
            companyAccount="Acme",
        ),
        contact("Bob", "Ray", "+14155552672", phoneType="mobile"),
        contact("Cy", "Fox", "+33 1 42 68 53 00", phone2="12"),  # phone2 is not a number
    ]
    job_id = await api_job(api, tenant, *submitted)
    await settle(app)
    data = await get_ok(api, f"{V2}/jobs/{job_id}/contacts", tenant)
    contacts = data["contacts"]
    assert len(contacts) == 3

    for returned in contacts:
        assert set(returned) >= REQUIRED_CONTACT_KEYS
        assert returned["jobId"] == job_id
        assert returned["clientId"] == tenant.client_id
        assert returned["userId"] == tenant.user_id
        assert_iso(returned["createdAt"])
        assert_iso(returned["updatedAt"])
        phones = returned["phones"]
        assert isinstance(phones, list)
        assert phones
        assert [p["position"] for p in phones] == list(range(1, len(phones) + 1))
        for entry in phones:
            assert set(entry) >= PHONE_ENTRY_KEYS
            assert entry["status"] in PHONE_STATUSES
            assert isinstance(entry["position"], int)
            if entry["status"].startswith("na"):
                continue
            assert E164.match(entry["number"]), entry
            assert entry["type"] in PHONE_TYPES
            assert re.fullmatch(r"[A-Z]{2}", entry["country"]), entry
            assert entry["region"] in {"US", "EMEA", "APAC", None}
        # The deprecated flat fields mirror the first five entries of phones.
        for index, slot in enumerate(SLOTS):
            entry = phones[index] if index < len(phones) else None
            assert returned[slot] == (entry["number"] if entry else None), slot
            assert returned[f"{slot}Status"] == (entry["status"] if entry else None), slot
            assert returned[f"{slot}Type"] == (entry["type"] if entry else None), slot
            assert returned[f"{slot}Country"] == (entry["country"] if entry else None), slot
            assert returned[f"{slot}Region"] == (entry["region"] if entry else None), slot
        # D16 and D17, from the phones the contact carries.
        assert returned["leadStatus"] == expected_lead_status(phones)
        best = expected_best_phone(phones)
        if best is None:
            assert returned["bestPhone"] is None
        else:
            assert returned["bestPhone"]["number"] == best["number"]
            assert returned["bestPhone"]["status"] == best["status"]

    ann, bob, cy = contacts
    assert ann["firstName"] == "Ann"
    assert ann["companyAccount"] == "Acme"
    assert ann["title"] == "CTO"
    assert [p["number"] for p in ann["phones"]] == ["+14155552671", "+447400123456", "+61293744000"]
    assert [p["country"] for p in ann["phones"]] == ["US", "GB", "AU"]
    assert [p["region"] for p in ann["phones"]] == ["US", "EMEA", "APAC"]
    assert ann["phones"][1]["type"] == "mobile"
    assert ann["phones"][1]["status"] == "p1"
    assert ann["leadStatus"] == "P1"
    assert ann["bestPhone"]["number"] == "+447400123456"
    assert ann["bestPhone"]["status"] == "p1"

    assert bob["phones"][0]["type"] == "mobile"
    assert bob["leadStatus"] in {"P1", "P2", "P3"}
    assert bob["bestPhone"]["number"] == "+14155552672"

    assert cy["companyAccount"] is None
    assert len(cy["phones"]) == 2
    assert cy["phones"][0]["number"] == "+33142685300"
    assert cy["phones"][0]["country"] == "FR"
    assert cy["phones"][0]["region"] == "EMEA"
    assert cy["phones"][1]["status"].startswith("na")
    assert cy["bestPhone"]["number"] == "+33142685300"
    assert cy["phone2Status"] == cy["phones"][1]["status"]


async def test_contact_before_processing(idle_api: httpx.AsyncClient, idle_db: Database) -> None:
    tenant = await make_tenant(idle_db, SECRET)
    job_id = await service_job(
        idle_db,
        tenant,
        source="api",
        contacts=[contact("Ann", "Lee", "+14155552671", phone2="+447911123456")],
    )
    job = await get_ok(idle_api, f"{V2}/jobs/{job_id}", tenant)
    assert job["status"] == "Init"
    listed = await get_ok(idle_api, f"{V2}/jobs", tenant)
    assert [(j["id"], j["status"]) for j in listed["jobs"]] == [(job_id, "Init")]

    data = await get_ok(idle_api, f"{V2}/jobs/{job_id}/contacts", tenant)
    assert data["pagination"] == pagination(1, 100, 1, 1, False, False)
    [pending] = data["contacts"]
    assert set(pending) >= REQUIRED_CONTACT_KEYS
    assert pending["leadStatus"] == "Uncontacted"
    assert pending["bestPhone"] is None
    assert [p["number"] for p in pending["phones"]] == ["+14155552671", "+447911123456"]
    assert [p["position"] for p in pending["phones"]] == [1, 2]
    for entry in pending["phones"]:
        assert set(entry) >= PHONE_ENTRY_KEYS
        assert entry["status"] is None
    assert pending["phone"] == "+14155552671"
    assert pending["phoneStatus"] is None
    assert pending["phone2Status"] is None


@pytest.mark.parametrize("path", ["/jobs", "/jobs/{jobId}/contacts"])
async def test_huge_page_number_is_not_a_server_error(
    app: FastAPI, tenant: Tenant, path: str
) -> None:
    # D14: out-of-range values answer 400; a page past the end answers an empty page. A page
    # number whose offset does not fit the database's integers must be one of the two.
    page = 10**20
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        job_id = await api_job(client, tenant)
        response = await client.get(
            V2 + path.replace("{jobId}", job_id),
            headers=tenant.headers,
            params={"page": page, "limit": 1000},
        )
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert_error(response, 400)
    else:
        data = response.json()["data"]
        items = data["jobs"] if path == "/jobs" else data["contacts"]
        assert items == []
        assert data["pagination"]["page"] == page
        assert data["pagination"]["hasNextPage"] is False


# -- /account -----------------------------------------------------------------------------------

FEATURES = {
    "team": {
        "apiAccess": True,
        "features": {
            "lightningScoring": True,
            "coreScoring": False,
            "enrichmentWithLightning": True,
            "enrichmentWithCore": False,
        },
    },
    "business": {
        "apiAccess": True,
        "features": {
            "lightningScoring": True,
            "coreScoring": True,
            "enrichmentWithLightning": True,
            "enrichmentWithCore": True,
        },
    },
}


@pytest.mark.parametrize("plan", ["team", "business"])
async def test_account_credits(api: httpx.AsyncClient, db: Database, plan: str) -> None:
    tenant = await make_tenant(db, SECRET, plan=plan, credits=250)
    response = await api.get(f"{V2}/account/credits", headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "data": {"credits": 250, "key": {"monthlyCreditLimit": None, "spentThisMonth": 0}}
    }

    submitted = await submit(api, tenant, [contact()])
    assert submitted.status_code == 200, submitted.text
    response = await api.get(f"{V2}/account/credits", headers=tenant.headers)
    credits = response.json()["data"]["credits"]
    assert isinstance(credits, int | float)
    assert credits == 249.95
    assert credits == submitted.json()["credits"]["creditsRemaining"]


@pytest.mark.parametrize("plan", ["team", "business"])
async def test_account_features(api: httpx.AsyncClient, db: Database, plan: str) -> None:
    tenant = await make_tenant(db, SECRET, plan=plan)
    response = await api.get(f"{V2}/account/features", headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"data": FEATURES[plan]}


# -- health, documents, unknown routes ----------------------------------------------------------


async def test_health_and_readiness(api: httpx.AsyncClient) -> None:
    healthz = await api.get("/healthz")
    assert healthz.status_code == 200
    assert healthz.json() == {"status": "ok"}
    readyz = await api.get("/readyz")
    assert readyz.status_code == 200
    assert readyz.json() == {"status": "ok"}


async def test_openapi_lists_every_v2_path(api: httpx.AsyncClient, tenant: Tenant) -> None:
    job_id = await api_job(api, tenant)
    served = {
        ("post", f"{V2}/contacts/score"): {"contacts": [contact("Bo", "Ray")]},
        ("post", f"{V2}/contacts/enrich"): {"contacts": [contact(companyAccount="Acme")]},
        ("get", f"{V2}/jobs"): None,
        ("get", f"{V2}/jobs/{{jobId}}"): None,
        ("get", f"{V2}/jobs/{{jobId}}/contacts"): None,
        ("get", f"{V2}/account/credits"): None,
        ("get", f"{V2}/account/features"): None,
    }
    assert {path for _, path in served} == V2_PATHS
    # The app does serve each of them.
    for (method, path), body in served.items():
        concrete = path.replace("{jobId}", job_id)
        response = await api.request(method, concrete, json=body, headers=tenant.headers)
        assert response.status_code == 200, (method, path, response.text)

    response = await api.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    document = json.loads(response.content)
    assert document["openapi"].startswith("3.")
    paths = document["paths"]
    for method, path in served:
        assert path in paths, path
        assert method in paths[path], (method, path)
    schemes = document["components"]["securitySchemes"]
    assert any(s.get("scheme") == "bearer" for s in schemes.values())


async def test_docs_page(api: httpx.AsyncClient) -> None:
    response = await api.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "openapi.json" in response.text


@pytest.mark.parametrize(
    "path", [f"{V2}/nothing-here", f"{V2}/jobs/x/y/z", "/api/public/v3/jobs", "/nope"]
)
async def test_unknown_path_is_404(api: httpx.AsyncClient, tenant: Tenant, path: str) -> None:
    assert_error(await api.get(path, headers=tenant.headers), 404)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", f"{V2}/jobs"),
        ("POST", f"{V2}/jobs"),
        ("PUT", f"{V2}/account/credits"),
        ("GET", f"{V2}/contacts/score"),
        ("PATCH", f"{V2}/jobs/3f1c2b9e-8d7a-4c6b-9e5f-1a2b3c4d5e6f"),
    ],
)
async def test_wrong_method_is_405(
    api: httpx.AsyncClient, tenant: Tenant, method: str, path: str
) -> None:
    response = await api.request(method, path, headers=tenant.headers)
    assert_error(response, 405)
    assert "allow" in {k.lower() for k in response.headers}
