"""Bearer authentication (D2) and the no-API-access rule of the free plan (D4)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy import func, select

from dialscore.accounts import service as accounts
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.security import issue_api_key
from dialscore.models import Job
from tests.conftest import SECRET
from tests.support import V2, Tenant, add_user, assert_error, contact, ledger_sum, make_tenant

# The two endpoints every authentication rule is checked on: a read and a submission.
ENDPOINTS = [
    pytest.param("GET", f"{V2}/account/credits", None, id="credits"),
    pytest.param("POST", f"{V2}/contacts/score", {"contacts": [contact()]}, id="score"),
]


async def call(
    api: httpx.AsyncClient,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    authorization: str | None,
) -> httpx.Response:
    headers = {} if authorization is None else {"Authorization": authorization}
    return await api.request(method, path, json=body, headers=headers)


async def job_count(db: Database) -> int:
    async with db.read() as session:
        return int(await session.scalar(select(func.count()).select_from(Job)) or 0)


async def assert_nothing_created(db: Database, tenant: Tenant) -> None:
    assert await job_count(db) == 0
    assert await ledger_sum(db, tenant.client_id) == Decimal(1000)


# -- positive controls ------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_valid_key_is_accepted(
    api: httpx.AsyncClient, tenant: Tenant, method: str, path: str, body: dict[str, Any] | None
) -> None:
    response = await call(api, method, path, body, f"Bearer {tenant.api_key}")
    assert response.status_code == 200, response.text
    assert "data" in response.json()


async def test_scheme_is_case_insensitive_and_key_with_future_expiry_works(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    async with db.unit_of_work() as session:
        key = await accounts.create_key(
            session,
            user_id=tenant.user_id,
            secret=SECRET,
            expires_at=utcnow() + timedelta(days=1),
        )
    response = await api.get(
        f"{V2}/account/credits", headers={"Authorization": f"bearer {key.api_key}"}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "data": {"credits": 1000, "key": {"monthlyCreditLimit": None, "spentThisMonth": 0}}
    }


# -- 401 --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_missing_authorization_header_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    assert_error(await call(api, method, path, body, None), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
@pytest.mark.parametrize("scheme", ["Basic", "Token", "JWT", "Bearer:"])
async def test_scheme_other_than_bearer_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    scheme: str,
) -> None:
    # The key itself is valid: only the scheme is wrong.
    response = await call(api, method, path, body, f"{scheme} {tenant.api_key}")
    assert_error(response, 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_bare_key_without_scheme_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    assert_error(await call(api, method, path, body, tenant.api_key), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
@pytest.mark.parametrize("authorization", ["Bearer", "Bearer ", "Bearer    ", ""])
async def test_empty_token_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    authorization: str,
) -> None:
    assert_error(await call(api, method, path, body, authorization), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
@pytest.mark.parametrize(
    "token",
    ["garbage", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.e30.x", "0b4a6d1e-5b8f-4f7a-9a54-3c2d1e0f9a87"],
)
async def test_garbage_token_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    token: str,
) -> None:
    assert_error(await call(api, method, path, body, f"Bearer {token}"), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_tampered_token_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    header, payload, signature = tenant.api_key.split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    token = f"{header}.{payload}.{flipped}"
    assert_error(await call(api, method, path, body, f"Bearer {token}"), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_jwt_signed_with_another_secret_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    # Claims of a live key row: only the signature is foreign.
    token = issue_api_key(
        "another-secret-that-is-also-long-enough-for-hs256",
        user_id=tenant.user_id,
        client_id=tenant.client_id,
        key_id=tenant.key_id,
        issued_at=utcnow(),
    )
    assert_error(await call(api, method, path, body, f"Bearer {token}"), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_well_signed_jwt_without_key_row_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    token = issue_api_key(
        SECRET,
        user_id=tenant.user_id,
        client_id=tenant.client_id,
        key_id=str(uuid.uuid4()),
        issued_at=utcnow(),
    )
    assert_error(await call(api, method, path, body, f"Bearer {token}"), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
@pytest.mark.parametrize("mismatch", ["sub", "cid", "both"])
async def test_jwt_claims_not_matching_key_row_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    mismatch: str,
) -> None:
    # Real users and clients, so only the pairing with this key id is wrong.
    member = await add_user(db, SECRET, tenant, "member@example.com")
    other = await make_tenant(db, SECRET, name="Other")
    user_id = tenant.user_id if mismatch == "cid" else member.user_id
    client_id = tenant.client_id if mismatch == "sub" else other.client_id
    if mismatch == "both":
        user_id = other.user_id
    token = issue_api_key(
        SECRET, user_id=user_id, client_id=client_id, key_id=tenant.key_id, issued_at=utcnow()
    )
    assert_error(await call(api, method, path, body, f"Bearer {token}"), 401)
    await assert_nothing_created(db, tenant)
    assert await ledger_sum(db, other.client_id) == Decimal(1000)


async def test_jwt_without_key_id_claim_is_401(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    claims = {"sub": tenant.user_id, "cid": tenant.client_id, "iat": int(utcnow().timestamp())}
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    assert_error(
        await api.get(f"{V2}/account/credits", headers={"Authorization": f"Bearer {token}"}),
        401,
    )


async def test_unsigned_jwt_is_401(api: httpx.AsyncClient, db: Database, tenant: Tenant) -> None:
    claims = {
        "sub": tenant.user_id,
        "cid": tenant.client_id,
        "jti": tenant.key_id,
        "iat": int(utcnow().timestamp()),
    }
    token = jwt.encode(claims, None, algorithm="none")
    assert_error(
        await api.get(f"{V2}/account/credits", headers={"Authorization": f"Bearer {token}"}),
        401,
    )


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_revoked_key_is_401_on_the_next_request(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    async with db.unit_of_work() as session:
        spare = await accounts.create_key(session, user_id=tenant.user_id, secret=SECRET)
    authorization = f"Bearer {tenant.api_key}"
    first = await call(api, method, path, body, authorization)
    assert first.status_code == 200, first.text
    balance = await ledger_sum(db, tenant.client_id)
    jobs = await job_count(db)

    async with db.unit_of_work() as session:
        await accounts.revoke_key(session, key_id=tenant.key_id)

    assert_error(await call(api, method, path, body, authorization), 401)
    assert_error(await call(api, "GET", f"{V2}/jobs", None, authorization), 401)
    assert await ledger_sum(db, tenant.client_id) == balance
    assert await job_count(db) == jobs
    # Revocation is per key: another key of the same user still works.
    still = await api.get(
        f"{V2}/account/credits", headers={"Authorization": f"Bearer {spare.api_key}"}
    )
    assert still.status_code == 200, still.text


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_expired_key_is_401(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    async with db.unit_of_work() as session:
        key = await accounts.create_key(
            session,
            user_id=tenant.user_id,
            secret=SECRET,
            expires_at=utcnow() - timedelta(minutes=5),
        )
    assert_error(await call(api, method, path, body, f"Bearer {key.api_key}"), 401)
    await assert_nothing_created(db, tenant)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
async def test_key_expired_in_its_row_is_401_even_if_token_has_no_exp(
    api: httpx.AsyncClient,
    db: Database,
    tenant: Tenant,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    # The server keeps the expiry in the key row; a token without ``exp`` does not outlive it.
    async with db.unit_of_work() as session:
        key = await accounts.create_key(
            session,
            user_id=tenant.user_id,
            secret=SECRET,
            expires_at=utcnow() - timedelta(minutes=5),
        )
    token = issue_api_key(
        SECRET,
        user_id=tenant.user_id,
        client_id=tenant.client_id,
        key_id=key.key_id,
        issued_at=utcnow() - timedelta(hours=1),
    )
    assert_error(await call(api, method, path, body, f"Bearer {token}"), 401)
    await assert_nothing_created(db, tenant)


async def test_authentication_is_checked_before_the_request_is_read(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    # A request with no valid key learns nothing about its query, path or body.
    assert_error(await api.get(f"{V2}/jobs", params={"limit": 0}), 401)
    assert_error(await api.get(f"{V2}/jobs/not-a-uuid"), 401)
    assert_error(
        await api.post(
            f"{V2}/contacts/score",
            content=b"{not json",
            headers={"Authorization": "Bearer garbage", "Content-Type": "application/json"},
        ),
        401,
    )
    assert_error(await api.post(f"{V2}/contacts/score", json={"contacts": []}), 401)
    await assert_nothing_created(db, tenant)


# -- 403: plan without API access (D4) ------------------------------------------------------------

FREE_PLAN_ENDPOINTS = [
    pytest.param("GET", f"{V2}/account/credits", None, id="credits"),
    pytest.param("GET", f"{V2}/account/features", None, id="features"),
    pytest.param("GET", f"{V2}/jobs", None, id="jobs"),
    pytest.param("GET", f"{V2}/jobs/{uuid.uuid4()}", None, id="job"),
    pytest.param("GET", f"{V2}/jobs/{uuid.uuid4()}/contacts", None, id="job-contacts"),
    pytest.param("POST", f"{V2}/contacts/score", {"contacts": [contact()]}, id="score"),
    pytest.param(
        "POST",
        f"{V2}/contacts/enrich",
        {"contacts": [contact(companyAccount="Acme")]},
        id="enrich",
    ),
]


@pytest.mark.parametrize(("method", "path", "body"), FREE_PLAN_ENDPOINTS)
async def test_free_plan_key_is_403_without_api_access(
    api: httpx.AsyncClient, db: Database, method: str, path: str, body: dict[str, Any] | None
) -> None:
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    response = await call(api, method, path, body, f"Bearer {free.api_key}")
    message = assert_error(response, 403)
    assert "api access" in message.lower()
    assert await job_count(db) == 0
    assert await ledger_sum(db, free.client_id) == Decimal(1000)


async def test_free_plan_is_403_before_the_request_is_validated(
    api: httpx.AsyncClient, db: Database
) -> None:
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    message = assert_error(
        await api.get(f"{V2}/jobs", params={"limit": 0}, headers=free.headers), 403
    )
    assert "api access" in message.lower()
    message = assert_error(
        await api.post(f"{V2}/contacts/score", json={"contacts": []}, headers=free.headers), 403
    )
    assert "api access" in message.lower()


async def test_free_plan_checks_authentication_first(api: httpx.AsyncClient, db: Database) -> None:
    # A bad key of a free client is still an authentication failure, not a plan failure.
    free = await make_tenant(db, SECRET, plan="free", name="Freebie")
    async with db.unit_of_work() as session:
        await accounts.revoke_key(session, key_id=free.key_id)
    response = await api.get(f"{V2}/account/credits", headers=free.headers)
    assert_error(response, 401)
