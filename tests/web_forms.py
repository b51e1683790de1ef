"""Signing in to the web app over HTTP (no browser), for tests of its pages and forms."""

from __future__ import annotations

import re

import httpx

from dialscore.kit.db import Database
from dialscore.signin import service as signin

PASSWORD = "correct horse battery"
FORM_TOKEN = re.compile(r'name="form_token" value="([^"]+)"')
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
ONCE = re.compile(r'name="once" value="([^"]+)"')


async def attempt_sign_in(
    client: httpx.AsyncClient, email: str, password: str = PASSWORD
) -> httpx.Response:
    """Sends the sign-in form as a browser would (its token cookie first); the answer."""
    form = await client.get("/app/sign-in")
    token = FORM_TOKEN.search(form.text)
    assert token is not None, form.text
    return await client.post(
        "/app/sign-in",
        data={"email": email, "password": password, "form_token": token[1], "next": "/app/jobs"},
    )


async def csrf_token(client: httpx.AsyncClient, path: str = "/app/account") -> str:
    """The session's CSRF token, as a page of ``path`` carries it in its forms."""
    page = await client.get(path)
    assert page.status_code == 200, page.text
    found = CSRF.search(page.text)
    assert found is not None, page.text
    return found[1]


async def once_token(client: httpx.AsyncClient, path: str) -> str:
    """The one-time token of the create form on the page of ``path``."""
    page = await client.get(path)
    assert page.status_code == 200, page.text
    found = ONCE.search(page.text)
    assert found is not None, page.text
    return found[1]


async def sign_in(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> str:
    """Signs ``client`` in; the session's CSRF token."""
    answer = await attempt_sign_in(client, email, password)
    assert answer.status_code == 303, answer.text
    return await csrf_token(client)


async def sign_in_user(
    client: httpx.AsyncClient, db: Database, user_id: str, password: str = PASSWORD
) -> str:
    """Gives the user ``password`` and signs ``client`` in as them; the CSRF token."""
    async with db.unit_of_work() as session:
        user = await signin.set_password(session, user_id=user_id, password=password)
        email = user.email
    return await sign_in(client, email, password)
