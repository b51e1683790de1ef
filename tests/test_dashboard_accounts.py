"""The web app's API keys, Users and Account pages over HTTP (no browser), on SQLite and
PostgreSQL; and the password commands of the CLI."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from dialscore.accounts import service as accounts
from dialscore.config import Settings
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import ApiKey, User
from dialscore.signin import service as signin
from dialscore.signin.schemas import Policy
from dialscore.v1 import service as v1
from tests.conftest import SECRET
from tests.processes import (
    DATABASES,
    cli_database_env,
    run_cli,
)
from tests.support import V2, Tenant, add_user, make_tenant
from tests.web_forms import PASSWORD, attempt_sign_in, once_token, sign_in

LOCK_AFTER = 3


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # Failed sign-ins are refused after LOCK_AFTER, without the growing wait before that.
    return settings.model_copy(
        update={"signin_failures_before_delay": 100, "signin_failures_before_lock": LOCK_AFTER}
    )


@dataclass
class Team:
    admin: Tenant
    admin_email: str
    member: Tenant
    member_email: str


@pytest.fixture
async def team(db: Database) -> Team:
    admin = await make_tenant(db, SECRET, plan="business", credits=1000)
    member = await add_user(db, SECRET, admin, "member@acme.example")
    async with db.unit_of_work() as session:
        admin_user = await signin.set_password(session, user_id=admin.user_id, password=PASSWORD)
        await signin.set_password(session, user_id=member.user_id, password=PASSWORD)
        admin_email = admin_user.email
    return Team(admin, admin_email, member, "member@acme.example")


@pytest.fixture
async def browser(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A second client with cookies of its own, on the same app as ``api``."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


async def key_count(db: Database, client_id: str) -> int:
    async with db.read() as session:
        count = await session.scalar(
            select(func.count()).select_from(ApiKey).where(ApiKey.client_id == client_id)
        )
    return count or 0


async def credits_status(api: httpx.AsyncClient, tenant: Tenant | str) -> int:
    key = tenant.api_key if isinstance(tenant, Tenant) else tenant
    answer = await api.get(f"{V2}/account/credits", headers={"Authorization": f"Bearer {key}"})
    return answer.status_code


# -- CSRF, roles, other clients ----------------------------------------------------------------


async def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    before = await key_count(db, team.admin.client_id)
    for data in ({"label": "CI"}, {"label": "CI", "csrf_token": token + "x"}):
        refused = await api.post("/app/keys", data=data)
        assert refused.status_code == 403, refused.text
    refused = await api.post(f"/app/users/{team.member.user_id}/deactivate", data={})
    assert refused.status_code == 403
    refused = await api.post(f"/app/keys/{team.member.key_id}/revoke", data={})
    assert refused.status_code == 403
    assert await key_count(db, team.admin.client_id) == before
    assert await credits_status(api, team.member) == 200

    made = await api.post("/app/keys", data={"label": "CI", "csrf_token": token})
    assert made.status_code == 200, made.text
    assert await key_count(db, team.admin.client_id) == before + 1


async def test_the_key_form_sent_again_creates_nothing_more(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    before = await key_count(db, team.admin.client_id)
    sent = {"label": "CI", "csrf_token": token, "once": await once_token(api, "/app/keys")}
    first = await api.post("/app/keys", data=sent)
    assert first.status_code == 200 and 'id="new-api-key"' in first.text, first.text
    again = await api.post("/app/keys", data=sent)
    assert again.status_code == 200, again.text
    assert "This form was already sent: the key “CI” was created then" in again.text
    assert 'id="new-api-key"' not in again.text
    assert await key_count(db, team.admin.client_id) == before + 1


async def test_a_member_gets_404_on_the_admin_pages(api: httpx.AsyncClient, team: Team) -> None:
    token = await sign_in(api, team.member_email)
    for path in ("/app/keys", "/app/users", f"/app/keys/{team.admin.key_id}/revoke"):
        answer = await api.get(path)
        assert answer.status_code == 404, path
    for path in ("/app/keys", "/app/users", f"/app/users/{team.admin.user_id}/deactivate"):
        answer = await api.post(path, data={"csrf_token": token, "label": "x", "email": "a@b.c"})
        assert answer.status_code == 404, path
    assert await credits_status(api, team.admin) == 200
    account = await api.get("/app/account")
    assert account.status_code == 200
    assert 'href="/app/keys"' not in account.text


async def test_another_clients_keys_and_users_are_not_found(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    other = await make_tenant(db, SECRET, name="Other")
    token = await sign_in(api, team.admin_email)
    assert (await api.get(f"/app/keys/{other.key_id}/revoke")).status_code == 404
    assert (await api.get(f"/app/users/{other.user_id}/deactivate")).status_code == 404
    for path, data in (
        (f"/app/keys/{other.key_id}/revoke", {}),
        (f"/app/users/{other.user_id}/deactivate", {}),
        (f"/app/users/{other.user_id}/reactivate", {}),
        (f"/app/users/{other.user_id}/role", {"role": "member"}),
        (f"/app/users/{other.user_id}/link", {}),
        ("/app/keys", {"label": "theirs", "owner": other.user_id}),
    ):
        answer = await api.post(path, data={"csrf_token": token, **data})
        assert answer.status_code in (400, 404), path
        if path != "/app/keys":
            assert answer.status_code == 404, path
        else:
            assert "Choose an active user of your team." in answer.text
    assert await credits_status(api, other) == 200
    assert await key_count(db, other.client_id) == 1
    async with db.read() as session:
        theirs = await session.get(User, other.user_id)
        assert theirs is not None
        assert (theirs.role, theirs.deactivated_at) == ("admin", None)
    listing = await api.get("/app/keys")
    assert other.key_id not in listing.text


# -- API keys ------------------------------------------------------------------------------------


async def test_a_key_form_with_mistakes_keeps_what_was_typed(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    before = await key_count(db, team.admin.client_id)
    blank = await api.post("/app/keys", data={"csrf_token": token, "label": "  "})
    assert blank.status_code == 400
    assert "Give the key a label" in blank.text
    past = (utcnow() - timedelta(days=2)).date().isoformat()
    late = await api.post(
        "/app/keys", data={"csrf_token": token, "label": "Nightly <export>", "expires": past}
    )
    assert late.status_code == 400
    assert "The expiry date must be today or later." in late.text
    assert 'value="Nightly &lt;export&gt;"' in late.text
    assert f'value="{past}"' in late.text
    assert await key_count(db, team.admin.client_id) == before


async def test_a_key_for_a_member_with_an_expiry_works_and_is_listed(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    day = (utcnow() + timedelta(days=30)).date()
    made = await api.post(
        "/app/keys",
        data={
            "csrf_token": token,
            "label": "Dialer",
            "owner": team.member.user_id,
            "expires": day.isoformat(),
        },
    )
    assert made.status_code == 200, made.text
    assert made.headers["cache-control"] == "no-store"
    found = re.search(r'id="new-api-key" type="text" readonly value="([^"]+)"', made.text)
    assert found is not None
    assert await credits_status(api, found[1]) == 200
    async with db.read() as session:
        key = (await session.scalars(select(ApiKey).where(ApiKey.label == "Dialer"))).one()
    assert key.user_id == team.member.user_id
    assert key.expires_at is not None and key.expires_at.date() == day + timedelta(days=1)
    listing = await api.get("/app/keys")
    assert found[1] not in listing.text
    row = listing.text.split("Dialer", 1)[1].split("</tr>", 1)[0]
    assert team.member_email in row and "active" in row


async def test_a_keys_last_use_is_written_at_most_once_a_minute(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    now = utcnow()
    authorization = f"Bearer {team.member.api_key}"

    async def last_used() -> Any:
        async with db.read() as session:
            key = await session.get(ApiKey, team.member.key_id)
            assert key is not None
            return key.last_used_at

    assert await last_used() is None
    for moment, expected in (
        (now, now),
        (now + timedelta(seconds=30), now),
        (now + timedelta(seconds=61), now + timedelta(seconds=61)),
    ):
        principal = await accounts.authenticate_and_record(
            db, secret=SECRET, authorization=authorization, now=moment
        )
        assert principal.key_id == team.member.key_id
        assert await last_used() == expected
    await sign_in(api, team.admin_email)
    listing = await api.get("/app/keys")
    stamp = (now + timedelta(seconds=61)).strftime("%Y-%m-%d %H:%M")
    assert stamp in listing.text


async def test_an_api_request_records_its_keys_last_use(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    before = utcnow()
    answer = await api.get(f"{V2}/account/credits", headers=team.member.headers)
    assert answer.status_code == 200
    async with db.read() as session:
        key = await session.get(ApiKey, team.member.key_id)
        assert key is not None and key.last_used_at is not None
        assert before <= key.last_used_at <= utcnow()


# -- users ---------------------------------------------------------------------------------------


def link_of(page: str) -> str:
    found = re.search(r'id="password-link" type="text" readonly value="([^"]+)"', page)
    assert found is not None, page
    return found[1]


async def test_a_new_users_password_link_works_once(
    api: httpx.AsyncClient, browser: httpx.AsyncClient, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    added = await api.post(
        "/app/users", data={"csrf_token": token, "email": "Cy@Acme.example", "role": "member"}
    )
    assert added.status_code == 200, added.text
    link = link_of(added.text)
    assert added.headers["cache-control"] == "no-store"
    assert link.startswith("http://testserver/app/set-password/")
    path = link.removeprefix("http://testserver")
    assert (await browser.get(path)).status_code == 200
    short = await browser.post(path, data={"password": "short", "confirm": "short"})
    assert short.status_code == 400
    assert "at least 10 characters" in short.text
    done = await browser.post(path, data={"password": PASSWORD, "confirm": PASSWORD})
    assert done.status_code == 200
    assert "Your password is set" in done.text
    again = await browser.post(path, data={"password": PASSWORD + "!", "confirm": PASSWORD + "!"})
    assert again.status_code == 404
    assert (await browser.get(path)).status_code == 404
    await sign_in(browser, "cy@acme.example")

    duplicate = await api.post(
        "/app/users", data={"csrf_token": token, "email": "cy@acme.example", "role": "admin"}
    )
    assert duplicate.status_code == 400
    assert "A user with email cy@acme.example already exists." in duplicate.text
    assert 'value="cy@acme.example"' in duplicate.text


async def test_a_password_link_expires_after_24_hours(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    made_at = utcnow() - timedelta(hours=30)
    async with db.unit_of_work() as session:
        token = await signin.create_password_link(
            session, user_id=team.member.user_id, now=made_at, policy=Policy()
        )
    page = await api.get(f"/app/set-password/{token}")
    assert page.status_code == 404
    assert "ask your administrator for a new one" in page.text
    posted = await api.post(
        f"/app/set-password/{token}", data={"password": PASSWORD, "confirm": PASSWORD}
    )
    assert posted.status_code == 404
    async with db.read() as session:
        await signin.usable_link(session, token=token, now=made_at + timedelta(hours=23))
    async with db.unit_of_work() as session:
        with pytest.raises(Exception, match="not valid"):
            await signin.use_password_link(
                session, token=token, password=PASSWORD, now=made_at + timedelta(hours=24)
            )


async def test_an_admin_makes_a_new_link_for_an_existing_user(
    api: httpx.AsyncClient, browser: httpx.AsyncClient, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    answer = await api.post(f"/app/users/{team.member.user_id}/link", data={"csrf_token": token})
    assert answer.status_code == 200
    path = link_of(answer.text).removeprefix("http://testserver")
    new_password = "another horse battery"
    done = await browser.post(path, data={"password": new_password, "confirm": new_password})
    assert done.status_code == 200, done.text
    await sign_in(browser, team.member_email, new_password)


async def test_roles_change_but_an_admin_cannot_demote_or_deactivate_themself(
    api: httpx.AsyncClient, browser: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    promoted = await api.post(
        f"/app/users/{team.member.user_id}/role", data={"csrf_token": token, "role": "admin"}
    )
    assert promoted.status_code == 200
    await sign_in(browser, team.member_email)
    assert (await browser.get("/app/users")).status_code == 200

    demote = await api.post(
        f"/app/users/{team.admin.user_id}/role", data={"csrf_token": token, "role": "member"}
    )
    assert demote.status_code == 400
    assert "You cannot change your own role; ask another administrator." in demote.text
    leave = await api.post(
        f"/app/users/{team.admin.user_id}/deactivate", data={"csrf_token": token}
    )
    assert leave.status_code == 400
    assert "You cannot deactivate yourself; ask another administrator." in leave.text
    bad = await api.post(
        f"/app/users/{team.member.user_id}/role", data={"csrf_token": token, "role": "owner"}
    )
    assert bad.status_code == 400
    async with db.read() as session:
        me = await session.get(User, team.admin.user_id)
        assert me is not None and (me.role, me.deactivated_at) == ("admin", None)
    assert (await api.get("/app/users")).status_code == 200


async def test_deactivating_a_user_ends_their_session_and_their_keys(
    api: httpx.AsyncClient, browser: httpx.AsyncClient, team: Team
) -> None:
    await sign_in(browser, team.member_email)
    assert (await browser.get("/app/jobs")).status_code == 200
    assert await credits_status(api, team.member) == 200

    token = await sign_in(api, team.admin_email)
    confirm = await api.get(f"/app/users/{team.member.user_id}/deactivate")
    assert confirm.status_code == 200
    assert team.member_email in confirm.text
    done = await api.post(
        f"/app/users/{team.member.user_id}/deactivate", data={"csrf_token": token}
    )
    assert done.status_code == 303
    listing = await api.get(done.headers["location"])
    assert "deactivated" in listing.text

    gone = await browser.get("/app/jobs")
    assert gone.status_code == 303
    assert gone.headers["location"].startswith("/app/sign-in")
    assert await credits_status(api, team.member) == 401
    refused = await attempt_sign_in(browser, team.member_email, PASSWORD)
    assert refused.status_code == 401
    assert await credits_status(api, team.admin) == 200
    keys = await api.get("/app/keys")
    row = keys.text.split(team.member_email, 1)[1].split("</tr>", 1)[0]
    assert "user deactivated: the key answers 401" in row


async def test_a_deactivated_user_is_reactivated_with_their_password_and_keys(
    api: httpx.AsyncClient, browser: httpx.AsyncClient, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    member = f"/app/users/{team.member.user_id}"
    await api.post(f"{member}/deactivate", data={"csrf_token": token})
    assert await credits_status(api, team.member) == 401
    listing = await api.get("/app/users")
    assert f'action="{member}/reactivate"' in listing.text
    # The admin's own row offers no reactivation: only a deactivated user's does.
    assert f'action="/app/users/{team.admin.user_id}/reactivate"' not in listing.text

    done = await api.post(f"{member}/reactivate", data={"csrf_token": token})
    assert done.status_code == 200, done.text
    assert (
        "member@acme.example is active again: they can sign in with their password; 1 API key "
        "of theirs answers again (revoke any that should not)." in done.text
    )
    assert f'action="{member}/reactivate"' not in done.text
    assert await credits_status(api, team.member) == 200
    assert (await attempt_sign_in(browser, team.member_email, PASSWORD)).status_code == 303

    refused = await api.post(f"{member}/reactivate", data={})
    assert refused.status_code == 403


# -- signing in ----------------------------------------------------------------------------------


async def test_repeated_failed_sign_ins_are_refused_with_a_clear_message(
    api: httpx.AsyncClient, team: Team
) -> None:
    for _ in range(LOCK_AFTER):
        wrong = await attempt_sign_in(api, team.member_email, "not the password")
        assert wrong.status_code == 401
        assert "The email or password is not right." in wrong.text
    refused = await attempt_sign_in(api, team.member_email, PASSWORD)
    assert refused.status_code == 429
    assert "Too many failed sign-ins. Try again in 15 minutes" in refused.text
    assert "dialscore_session" not in refused.headers.get("set-cookie", "")
    # Another person is not locked out.
    assert (await attempt_sign_in(api, team.admin_email, PASSWORD)).status_code == 303


# -- account -------------------------------------------------------------------------------------


async def test_the_account_page_shows_plan_balance_ledger_and_tiers(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    async with db.unit_of_work() as session:
        for _ in range(30):
            await accounts.add_credits(
                session, client_id=team.admin.client_id, amount=Decimal("-0.5")
            )
    assert await credits_status(api, team.admin) == 200  # counted by the limiter

    async def minute_window() -> dict[str, int]:
        quota = await api.get("/api/public/quota", headers=team.admin.headers)
        figures: dict[str, int] = quota.json()["data"]["minute"]
        return figures

    await sign_in(api, team.member_email)
    # The page read between two reads of the quota that agree: the same minute window, so
    # what the page shows is what the window holds (a new minute may start in between).
    for _ in range(3):
        minute = await minute_window()
        page = await api.get("/app/account")
        if await minute_window() == minute:
            break
    assert page.status_code == 200
    text = page.text
    assert "<dd>business</dd>" in text
    assert "<strong data-balance>985</strong>" in text
    assert "page 1 of 2 (31 entries)" in text
    assert text.count(">operator</td>") == 25
    assert "-0.5" in text
    assert f"<strong>{minute['remaining']:,}</strong> left of {minute['limit']:,}" in text
    assert "5 per second" in text  # the business plan's webhook deliveries

    older = await api.get("/app/account?page=2")
    assert "page 2 of 2" in older.text
    assert "+1,000" in older.text
    assert "Newer entries" in older.text
    for wrong in ("0", "x", "-3"):
        first = await api.get(f"/app/account?page={wrong}")
        assert first.status_code == 200
        assert "page 1 of 2" in first.text


async def test_the_callback_secret_is_revealed_on_request(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.member_email)
    page = await api.get("/app/account")
    assert "Reveal callback secret" in page.text
    assert (await api.post("/app/account/callback-secret", data={})).status_code == 403
    shown = await api.post("/app/account/callback-secret", data={"csrf_token": token})
    assert shown.status_code == 200
    async with db.read() as session:
        secret = await v1.callback_secret(
            session, user_id=team.member.user_id, server_secret=SECRET
        )
    assert f'readonly value="{secret}"' in shown.text
    assert shown.headers["cache-control"] == "no-store"


# -- the password commands -----------------------------------------------------------------------


@pytest.fixture(params=DATABASES)
def cli_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with cli_database_env(request.param, tmp_path) as env:
        yield env


def stored_hash(env: dict[str, str], user_id: str) -> str | None:
    url = env.get("DIALSCORE_DATABASE_URL")
    if url is None:
        with sqlite3.connect(Path(env["DIALSCORE_DATA_DIR"]) / "dialscore.db") as conn:
            row = conn.execute(
                "SELECT password_hash FROM users WHERE id = ?", (user_id,)
            ).fetchone()
    else:
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT password_hash FROM users WHERE id = %s", (user_id,)
            ).fetchone()
    assert row is not None
    value: str | None = row[0]
    return value


def test_passwords_are_set_from_standard_input(cli_env: dict[str, str], tmp_path: Path) -> None:
    def ok(args: list[str], stdin: str) -> dict[str, Any]:
        result = run_cli(args, env=cli_env, cwd=tmp_path, stdin=stdin)
        assert result.returncode == 0, result.describe()
        assert result.stdout.count("\n") == 1, result.describe()
        payload: dict[str, Any] = json.loads(result.stdout)
        return payload

    created = ok(
        ["admin", "create-client", "--name", "Acme", "--email", "a@acme.example",
         "--password-stdin"],
        "first horse battery\n",
    )  # fmt: skip
    assert set(created) == {"clientId", "userId", "apiKey", "email", "passwordSet"}
    assert created["email"] == "a@acme.example"
    assert signin.password_matches(stored_hash(cli_env, created["userId"]), "first horse battery")

    member = ok(
        ["admin", "create-user", "--client", created["clientId"], "--email", "b@acme.example",
         "--password-stdin"],
        "member horse battery\r\n",
    )  # fmt: skip
    assert member == {"userId": member["userId"], "email": "b@acme.example", "passwordSet": True}
    assert signin.password_matches(stored_hash(cli_env, member["userId"]), "member horse battery")

    changed = ok(["admin", "set-password", "--user", member["userId"]], "  spaced  password \n")
    assert changed == {"userId": member["userId"], "email": "b@acme.example", "passwordSet": True}
    stored = stored_hash(cli_env, member["userId"])
    assert signin.password_matches(stored, "  spaced  password ")
    assert not signin.password_matches(stored, "member horse battery")

    for args, stdin, message in (
        (["admin", "set-password", "--user", member["userId"]], "short\n", "at least 10"),
        (["admin", "set-password", "--user", member["userId"]], "", "no password"),
        (["admin", "set-password", "--user", "nobody"], PASSWORD + "\n", "no user with id"),
    ):
        result = run_cli(args, env=cli_env, cwd=tmp_path, stdin=stdin)
        assert result.returncode != 0 and result.stdout == "", result.describe()
        assert message in json.loads(result.stderr)["error"], result.describe()
    assert signin.password_matches(stored_hash(cli_env, member["userId"]), "  spaced  password ")
