"""Every version 1 answer is marked deprecated with a link to its version 2 successor, and is
authenticated and rate-limited like version 2; the OpenAPI document marks the v1 paths."""

from __future__ import annotations

import itertools
import uuid

import httpx
import pytest
from fastapi import FastAPI

from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.support import V2, Tenant, assert_error, make_tenant, many_contacts, plan_tiers, settle

SCORE_LINK = '</api/public/v2/contacts/score>; rel="successor-version"'
ENRICH_LINK = '</api/public/v2/contacts/enrich>; rel="successor-version"'
JOBS_LINK = '</api/public/v2/jobs>; rel="successor-version"'
RATE_HEADERS = {
    f"x-ratelimit-{part}-{tier}"
    for part in ("limit", "remaining", "reset")
    for tier in ("second", "minute", "day")
}


def job_link(job_id: str) -> str:
    return f'</api/public/v2/jobs/{job_id}>; rel="successor-version"'


def assert_deprecated(response: httpx.Response, link: str) -> None:
    assert response.headers.get("deprecation") == "true", response.headers
    assert response.headers.get("link") == link
    assert set(response.headers) >= RATE_HEADERS, set(response.headers)


async def test_successful_answers_carry_the_headers(
    app: FastAPI, api: httpx.AsyncClient, tenant: Tenant
) -> None:
    score = await api.post(
        "/api/contacts/score", json={"contacts": many_contacts(1)}, headers=tenant.headers
    )
    assert score.status_code == 200, score.text
    assert_deprecated(score, SCORE_LINK)
    enrich = await api.post(
        "/api/contacts/enrich",
        json={"contacts": [{"firstName": "Ann", "companyAccount": "Acme"}]},
        headers=tenant.headers,
    )
    assert enrich.status_code == 200, enrich.text
    assert_deprecated(enrich, ENRICH_LINK)
    listed = await api.get("/api/jobs", headers=tenant.headers)
    assert listed.status_code == 200
    assert_deprecated(listed, JOBS_LINK)
    job_id = score.json()["data"]["jobId"]
    one = await api.get(f"/api/jobs/{job_id}", headers=tenant.headers)
    assert one.status_code == 200
    assert_deprecated(one, job_link(job_id))
    await settle(app)


async def test_error_answers_carry_the_headers(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    empty = await api.post("/api/contacts/score", json={"contacts": []}, headers=tenant.headers)
    assert_error(empty, 400)
    assert_deprecated(empty, SCORE_LINK)
    missing = str(uuid.uuid4())
    not_found = await api.get(f"/api/jobs/{missing}", headers=tenant.headers)
    assert_error(not_found, 404)
    assert_deprecated(not_found, job_link(missing))
    malformed = await api.get("/api/jobs/not a uuid", headers=tenant.headers)
    assert_error(malformed, 400)
    assert_deprecated(malformed, job_link("not%20a%20uuid"))
    wrong_method = await api.get("/api/contacts/enrich", headers=tenant.headers)
    assert wrong_method.status_code == 405
    assert_deprecated(wrong_method, ENRICH_LINK)
    poor = await make_tenant(db, SECRET, credits=0, name="Poor")
    short = await api.post(
        "/api/contacts/score", json={"contacts": many_contacts(1)}, headers=poor.headers
    )
    assert_error(short, 402)
    assert_deprecated(short, SCORE_LINK)


async def test_authentication_is_that_of_version_2(api: httpx.AsyncClient, db: Database) -> None:
    for headers in (None, {"Authorization": "Bearer not-a-key"}):
        for method, path, link in (
            ("POST", "/api/contacts/score", SCORE_LINK),
            ("POST", "/api/contacts/enrich", ENRICH_LINK),
            ("GET", "/api/jobs", JOBS_LINK),
        ):
            response = await api.request(method, path, json={"contacts": []}, headers=headers)
            assert_error(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"
            assert_deprecated(response, link)
    # D4: a plan without API access answers 403 here too.
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    refused = await api.get("/api/jobs", headers=free.headers)
    assert "API access" in assert_error(refused, 403)
    assert_deprecated(refused, JOBS_LINK)


async def test_rate_limits_count_v1_calls_and_429s_carry_the_headers(
    api: httpx.AsyncClient, db: Database
) -> None:
    tenant = await make_tenant(
        db, SECRET, tiers={"per_second": 1000, "per_minute": 10_000, "per_day": 3}
    )
    answers = [await api.get("/api/jobs", headers=tenant.headers) for _ in range(3)]
    # v1 calls spend the client's quota like any v2 call: one each.
    assert answers[0].headers["x-ratelimit-remaining-day"] == "2"
    for before, after in itertools.pairwise(answers):
        if before.headers["x-ratelimit-reset-day"] == after.headers["x-ratelimit-reset-day"]:
            remaining = int(before.headers["x-ratelimit-remaining-day"]) - 1
            assert int(after.headers["x-ratelimit-remaining-day"]) == remaining
    assert all(a.headers["x-ratelimit-limit-day"] == "3" for a in answers)
    refused = [await api.get("/api/jobs", headers=tenant.headers) for _ in range(3)]
    limited = [r for r in refused if r.status_code == 429]
    assert limited, [r.status_code for r in refused]
    for response in limited:
        assert response.json()["tier"] == "day"
        assert int(response.headers["retry-after"]) >= 1
        assert_deprecated(response, JOBS_LINK)
    # The v2 counterpart shares the counters and is not marked deprecated.
    v2 = await api.get(f"{V2}/jobs", headers=tenant.headers)
    assert v2.status_code == 429
    assert "deprecation" not in v2.headers and "link" not in v2.headers


async def test_unauthenticated_calls_are_limited_per_address(
    api: httpx.AsyncClient, db: Database
) -> None:
    async with plan_tiers(db, "free", {"per_second": 1000, "per_minute": 10_000, "per_day": 1}):
        answers = [await api.get("/api/jobs") for _ in range(3)]
    assert [a.status_code for a in answers].count(429) >= 1
    for answer in answers:
        assert_deprecated(answer, JOBS_LINK)


@pytest.mark.parametrize(
    "path",
    ["/api/public/v2/jobs", "/api/public/quota", "/api/contacts", "/api/jobs/1/contacts"],
)
async def test_other_paths_are_not_marked(
    api: httpx.AsyncClient, tenant: Tenant, path: str
) -> None:
    response = await api.get(path, headers=tenant.headers)
    assert "deprecation" not in response.headers
    assert "link" not in response.headers


async def test_openapi_marks_exactly_the_v1_operations_deprecated(api: httpx.AsyncClient) -> None:
    schema = (await api.get("/openapi.json")).json()
    paths = schema["paths"]
    deprecated = {
        (path, method)
        for path, operations in paths.items()
        for method, operation in operations.items()
        if operation.get("deprecated")
    }
    assert deprecated == {
        ("/api/contacts/score", "post"),
        ("/api/contacts/enrich", "post"),
        ("/api/jobs", "get"),
        ("/api/jobs/{id}", "get"),
    }
    score = paths["/api/contacts/score"]["post"]
    assert score["security"] == [{"bearerAuth": []}]
    for operation in (score, paths["/api/jobs/{id}"]["get"]):
        for response in operation["responses"].values():
            assert {"X-RateLimit-Remaining-Day", "Deprecation", "Link"} <= set(response["headers"])
    v2_headers = paths["/api/public/v2/jobs"]["get"]["responses"]["200"]["headers"]
    assert "Deprecation" not in v2_headers
    body = score["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body == "#/components/schemas/V1ScoreRequest"
    components = schema["components"]["schemas"]
    assert "callbackUrl" in components["V1ContactInput"]["properties"]
    assert "companyInfo" in components["V1EnrichContactInput"]["properties"]
    data = components["V1ScoreData"]["properties"]
    assert set(data) == {"totalRecordCount", "duplicateCount", "acceptedRecordCount", "jobId"}
