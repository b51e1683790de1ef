"""An admin created without an email (a client made by a script for its API key): the web app
never shows the stand-in address, and such a user gets no password and no password link
until an operator gives them an email (P94)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import httpx
import pytest

from dialscore.accounts import service as accounts
from dialscore.accounts.emails import PLACEHOLDER_DOMAIN
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.kit.errors import ApiError
from dialscore.signin import service as signin
from dialscore.signin.schemas import Policy
from tests.web_forms import PASSWORD, sign_in


@dataclass(frozen=True)
class Client:
    client_id: str
    # The admin made with the client, without an email.
    unnamed_id: str
    # A second admin, with an email and a password.
    named_email: str


@pytest.fixture
async def client(db: Database) -> Client:
    async with db.unit_of_work() as session:
        created, unnamed = await accounts.create_client(
            session, name="Acme", plan="team", credits=Decimal(10), admin_email=None
        )
        named = await accounts.create_user(
            session, client_id=created.id, email="ann@acme.example", role="admin"
        )
        await signin.set_password(session, user_id=named.id, password=PASSWORD)
    return Client(created.id, unnamed.id, named.email)


def assert_no_stand_in(page: httpx.Response) -> None:
    assert PLACEHOLDER_DOMAIN not in page.text, page.text


async def test_the_users_pages_say_no_email_yet_and_offer_no_link(
    api: httpx.AsyncClient, client: Client
) -> None:
    token = await sign_in(api, client.named_email)
    page = await api.get("/app/users")
    assert page.status_code == 200
    assert_no_stand_in(page)
    assert "no email yet" in page.text and "cannot sign in yet" in page.text
    assert f"/app/users/{client.unnamed_id}/link" not in page.text
    assert f"set-password --user {client.unnamed_id} --email" in page.text
    assert "ann@acme.example" in page.text

    refused = await api.post(f"/app/users/{client.unnamed_id}/link", data={"csrf_token": token})
    assert refused.status_code == 400
    assert_no_stand_in(refused)
    assert "no email yet" in refused.text and "password-link" not in refused.text

    demoted = await api.post(
        f"/app/users/{client.unnamed_id}/role", data={"csrf_token": token, "role": "member"}
    )
    assert demoted.status_code == 200
    assert_no_stand_in(demoted)
    assert "The user with no email yet is now member." in demoted.text

    confirm = await api.get(f"/app/users/{client.unnamed_id}/deactivate")
    assert confirm.status_code == 200
    assert_no_stand_in(confirm)
    assert "Deactivate the user with no email yet?" in confirm.text
    gone = await api.post(
        f"/app/users/{client.unnamed_id}/deactivate",
        data={"csrf_token": token},
        follow_redirects=True,
    )
    assert gone.status_code == 200
    assert_no_stand_in(gone)
    back = await api.post(f"/app/users/{client.unnamed_id}/reactivate", data={"csrf_token": token})
    assert back.status_code == 200
    assert_no_stand_in(back)
    assert "before an operator gives them an email" in back.text


async def test_no_password_reaches_a_user_without_an_email(
    api: httpx.AsyncClient, db: Database, client: Client
) -> None:
    now = utcnow()
    async with db.unit_of_work() as session:
        with pytest.raises(ApiError, match="no email yet"):
            await signin.give_sign_in(
                session,
                user_id=client.unnamed_id,
                email=None,
                password=PASSWORD,
                now=now,
                policy=Policy(),
            )
        with pytest.raises(ApiError, match="no email yet"):
            await signin.new_password_link(
                session,
                client_id=client.client_id,
                user_id=client.unnamed_id,
                now=now,
                policy=Policy(),
            )
        # A link made before the rule (the users page used to offer one) cannot be used.
        token = await signin.create_password_link(
            session, user_id=client.unnamed_id, now=now, policy=Policy()
        )
    page = await api.get(f"/app/set-password/{token}")
    assert page.status_code == 404
    assert_no_stand_in(page)
    assert "no email to sign in with yet" in page.text
    sent = await api.post(
        f"/app/set-password/{token}", data={"password": PASSWORD, "confirm": PASSWORD}
    )
    assert sent.status_code == 404
    async with db.read() as session:
        user = await accounts.find_user(session, user_id=client.unnamed_id)
        assert user.password_hash is None

    # Given an email, the same user gets a link, sets a password and signs in.
    async with db.unit_of_work() as session:
        user, link = await signin.give_sign_in(
            session,
            user_id=client.unnamed_id,
            email="Bo@Acme.example",
            password=None,
            now=utcnow(),
            policy=Policy(),
        )
    assert link is not None and user.email == "bo@acme.example"
    done = await api.post(
        f"/app/set-password/{link}", data={"password": PASSWORD, "confirm": PASSWORD}
    )
    assert done.status_code == 200 and "bo@acme.example" in done.text
    await sign_in(api, "bo@acme.example")
    assert "bo@acme.example" in (await api.get("/app/jobs")).text


async def test_an_email_is_given_only_when_free_and_a_persons(db: Database, client: Client) -> None:
    async with db.unit_of_work() as session:
        for email, status in (
            ("ANN@acme.example", 409),
            (f"admin+x@{PLACEHOLDER_DOMAIN}", 400),
            ("nobody", 400),
        ):
            with pytest.raises(ApiError) as refused:
                await accounts.set_email(session, user_id=client.unnamed_id, email=email)
            assert refused.value.status_code == status, email
        with pytest.raises(ApiError, match="no user with id nobody"):
            await accounts.set_email(session, user_id="nobody", email="cy@acme.example")
        with pytest.raises(ApiError, match=PLACEHOLDER_DOMAIN):
            await accounts.create_user(
                session,
                client_id=client.client_id,
                email=f"someone@{PLACEHOLDER_DOMAIN}",
                role="member",
            )
        named = await accounts.set_email(
            session, user_id=client.unnamed_id, email=" Cy@Acme.example "
        )
        assert named.email == "cy@acme.example"
