"""Hostile forms in the web app (P74): no form answers a 5xx, on both databases. A property
test sends generated hostile fields to every form of the app, found from its routes and its
templates; example tests pin the cases that once answered 500."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select

from dialscore import dashboard
from dialscore.app import create_app
from dialscore.config import Settings
from dialscore.dashboard.upload import file_name
from dialscore.kit.db import Database
from dialscore.models import ApiKey, User
from tests.conftest import SECRET
from tests.support import Tenant
from tests.test_hostile_input import ODD_TEXT, ODD_URLS, PROPERTY
from tests.web_forms import FORM_TOKEN, PASSWORD, sign_in_user

# Every field name the app's forms have, read from its templates.
TEMPLATES = Path(dashboard.__file__).parent / "templates"
FIELDS = sorted(
    {
        name
        for page in TEMPLATES.glob("*.html")
        for name in re.findall(r'name="([A-Za-z_][\w-]*)"', page.read_text())
        if name != "viewport"
    }
    | {"csrf_token", "column-0", "column-1"}
)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhook_allow_private": True})


def form_paths(app: FastAPI) -> list[str]:
    """The paths of every form of the web app (its POST routes)."""
    return sorted(
        route.path
        for route in iter_route_contexts(app.routes)
        if isinstance(route.path, str)
        and route.path.startswith("/app")
        and "POST" in (route.methods or ())
    )


def test_the_forms_are_found_from_the_routes_and_templates() -> None:
    app_settings = Settings(database_url="sqlite://", secret_key=SECRET, _env_file=None)  # type: ignore[call-arg]
    paths = form_paths(create_app(app_settings, run_worker=False))
    assert {"/app/sign-in", "/app/keys", "/app/users", "/app/webhooks", "/app/upload"} <= set(paths)
    assert {"email", "password", "label", "url", "events", "file", "form_token"} <= set(FIELDS)


texts = st.one_of(
    st.sampled_from([*ODD_TEXT, "x" * 5000, "a@b.example", "admin", "member", "lightning"]),
    st.text(alphabet=st.characters(categories=["Cc", "Zs", "Lo", "So", "Ll"]), max_size=10),
)
files = st.tuples(
    st.sampled_from(["contacts.csv", "a\x00b.csv", "../../etc/passwd", "\r\n.csv", "x" * 300, ""]),
    st.sampled_from(
        [
            b"firstName,lastName,phone\nAnn,Lee,+14155552671\n",
            b"firstName,phone\n\x00,1\n",
            b"\xff\xfe\x00garbage",
            b"",
            b'"unclosed\n',
            b"a;b;c\n1;2\n",
        ]
    ),
)


def _fill(path: str, draw: Any) -> str:
    """``path`` with each parameter a random id or hostile text."""
    while "{" in path:
        start, end = path.index("{"), path.index("}")
        value = draw(st.sampled_from([str(uuid.uuid4()), "x", "..", "%00"]) | texts)
        path = path[:start] + quote(value, safe="", errors="surrogatepass") + path[end + 1 :]
    return path


@PROPERTY
@given(data=st.data())
async def test_no_form_answers_a_server_error(
    data: st.DataObject, app: FastAPI, api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    if "dialscore_session" not in api.cookies:
        await sign_in_user(api, db, tenant.user_id)
    token = (await api.get("/app/account")).text
    found = re.search(r'name="csrf_token" value="([^"]+)"', token)
    assert found is not None
    for path in form_paths(app):
        fields: dict[str, Any] = {}
        for name in data.draw(st.lists(st.sampled_from(FIELDS), max_size=5, unique=True)):
            url_like = name.lower().endswith("url")
            fields[name] = data.draw(st.sampled_from(ODD_URLS) if url_like else texts, label=name)
        # The session's own token mostly, so that the forms go past it; never for signing
        # out, which would end the session the other forms need.
        valid = data.draw(st.booleans() | st.just(True)) and not path.endswith("sign-out")
        fields["csrf_token"] = found[1] if valid else data.draw(texts, label="csrf_token")
        if path.endswith("sign-in"):
            form = await api.get("/app/sign-in")
            sign_in_token = FORM_TOKEN.search(form.text)
            assert sign_in_token is not None
            fields.setdefault("form_token", sign_in_token[1])
        url = _fill(path, data.draw)
        if data.draw(st.booleans(), label="multipart"):
            name, content = data.draw(files, label="file")
            encoded = {k: str(v).encode("utf-8", "surrogatepass") for k, v in fields.items()}
            response = await api.post(url, data=encoded, files={"file": (name, content)})
        else:
            body = "&".join(
                f"{quote(k)}={quote(str(v), errors='surrogatepass')}" for k, v in fields.items()
            )
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            response = await api.post(url, content=body, headers=headers)
        assert response.status_code < 500, (url, fields, response.text[:300])


# -- the cases that once answered 500 ---------------------------------------------------------


async def test_odd_tokens_and_unstorable_fields_are_refused_and_change_nothing(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    token = await sign_in_user(api, db, tenant.user_id)
    for odd in ("é", "\u20ac" * 43, "\x00"):
        answer = await api.post("/app/keys", data={"csrf_token": odd, "label": "x"})
        assert answer.status_code == 403 and "This form has expired" in answer.text, odd
    # A field holding a NUL is named on the page.
    for path, fields in (
        ("/app/keys", {"label": "ops\x00key"}),
        ("/app/users", {"email": "a\x00@b.example", "role": "member"}),
        ("/app/webhooks", {"name": "hooks\x00", "url": "http://127.0.0.1:9/h", "events": "x"}),
    ):
        answer = await api.post(path, data={"csrf_token": token, **fields})
        assert answer.status_code == 400, (path, answer.text)
        name = next(iter(fields))
        assert f"The field “{name}” must not contain NUL characters" in answer.text, path
    api.cookies.clear()
    await api.get("/app/sign-in")
    answer = await api.post(
        "/app/sign-in", data={"email": "a@b.example", "password": PASSWORD, "form_token": "é"}
    )
    assert answer.status_code == 403, answer.text
    async with db.read() as session:
        assert (await session.scalars(select(ApiKey.label))).all() == [None]
        assert len((await session.scalars(select(User.id))).all()) == 1


async def test_an_email_no_user_can_have_signs_in_as_an_unknown_one(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    for email in ("ann\x00@b.example", "a" * 400 + "@b.example"):
        form = await api.get("/app/sign-in")
        token = FORM_TOKEN.search(form.text)
        assert token is not None
        sent = {"email": email, "password": PASSWORD, "form_token": token[1]}
        answer = await api.post("/app/sign-in", data=sent)
        assert answer.status_code == 401, answer.text
        assert "The email or password is not right." in answer.text
    token = await sign_in_user(api, db, tenant.user_id)
    answer = await api.post(
        "/app/users", data={"csrf_token": token, "email": "a" * 400 + "@b.example"}
    )
    assert answer.status_code == 400
    assert "Email must have at most 320 characters" in answer.text


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("con\x00tacts.csv", "contacts.csv"),
        ("C:\\Users\\ann\\list\r\n.csv", "list.csv"),
        ("\x00\x01", "contacts.csv"),
    ],
)
def test_a_file_name_loses_what_a_name_cannot_show(sent: str, kept: str) -> None:
    assert file_name(sent) == kept
