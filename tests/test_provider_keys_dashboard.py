"""The Account page's enrichment provider keys and order of sources (P204) over HTTP (no
browser), on SQLite and PostgreSQL: an admin sets, replaces and removes the team's own keys,
shown by their last four characters only, and the order; other users see them only."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import select, update

from dialscore.config import Settings
from dialscore.enrichment import client_settings as cs
from dialscore.kit.clock import utcnow
from dialscore.kit.db import Database
from dialscore.models import Client, ClientProviderKey
from dialscore.signin import service as signin
from tests.conftest import SECRET
from tests.support import Tenant, add_user, make_tenant
from tests.web_forms import PASSWORD, sign_in

PDL_KEY = "pdl-Secret-Key-0123456789abcdef"
APOLLO_KEY = "apolloKEY-9876-zyxw"
# The operator's sources for these tests: Apollo is not asked.
OPERATOR_SOURCES = "pdl,history,directory"
KEYS = "/app/account/provider-keys"
ORDER = "/app/account/enrichment-order"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"enrichment_sources": OPERATOR_SOURCES})


@dataclass
class Team:
    admin: Tenant
    admin_email: str
    member: Tenant
    member_email: str


@pytest.fixture
async def team(db: Database) -> Team:
    admin = await make_tenant(db, SECRET)
    member = await add_user(db, SECRET, admin, "member@acme.example")
    async with db.unit_of_work() as session:
        admin_user = await signin.set_password(session, user_id=admin.user_id, password=PASSWORD)
        await signin.set_password(session, user_id=member.user_id, password=PASSWORD)
        admin_email = admin_user.email
    return Team(admin, admin_email, member, "member@acme.example")


def visible_text(page: str) -> str:
    """What a person reads on the page: its text, without tags, attributes or scripts."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def section(page: str, heading: str) -> str:
    start = page.index(f'id="{heading}"')
    return page[start : page.index("</section>", start)]


async def stored_keys(db: Database, client_id: str) -> dict[str, str]:
    async with db.read() as session:
        rows = await session.scalars(
            select(ClientProviderKey).where(ClientProviderKey.client_id == client_id)
        )
        return {row.provider: row.last_four for row in rows}


async def stored_order(db: Database, client_id: str) -> list[str] | None:
    async with db.read() as session:
        value = await session.scalar(select(Client.enrichment_order).where(Client.id == client_id))
    return value


async def test_an_admin_sets_replaces_and_removes_a_key_seen_by_its_last_four_only(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    page = await api.get("/app/account")
    keys = section(page.text, "provider-keys-heading")
    text = visible_text(keys)
    assert "Enrichment provider keys" in text
    assert "People Data Labs" in text and "Apollo" in text
    assert "Numbers found with your own key cost no credits" in text
    assert text.count("Not set") == 2
    # Apollo is not among the operator's sources: said so, its key may still be set.
    assert "This service does not ask Apollo at present" in text
    assert "This service does not ask People Data Labs" not in text
    for provider in ("pdl", "apollo"):
        assert f'action="{KEYS}/{provider}"' in keys
    assert keys.count('type="password" autocomplete="off"') == 2
    assert f"{KEYS}/pdl/remove" not in keys

    saved = await api.post(f"{KEYS}/pdl", data={"csrf_token": token, "api_key": f" {PDL_KEY} "})
    assert saved.status_code == 200, saved.text
    assert saved.headers["cache-control"] == "no-store"
    assert "Your People Data Labs key ending cdef is saved." in visible_text(saved.text)
    assert "•••• cdef" in visible_text(section(saved.text, "provider-keys-heading"))
    assert f'action="{KEYS}/pdl/remove"' in saved.text
    assert await stored_keys(db, team.admin.client_id) == {"pdl": "cdef"}
    async with db.read() as session:
        opened = await cs.client_enrichment(session, team.admin.client_id, SECRET)
    assert opened.keys == {"pdl": PDL_KEY}

    await api.post(f"{KEYS}/apollo", data={"csrf_token": token, "api_key": APOLLO_KEY})
    replaced = await api.post(f"{KEYS}/pdl", data={"csrf_token": token, "api_key": "pdl-New-4321"})
    assert "•••• 4321" in replaced.text and "•••• cdef" not in replaced.text
    assert await stored_keys(db, team.admin.client_id) == {"pdl": "4321", "apollo": "zyxw"}
    again = await api.get("/app/account")
    for page_text in (saved.text, replaced.text, again.text):
        for secret in (PDL_KEY, APOLLO_KEY, "pdl-New-4321", "0123456789"):
            assert secret not in page_text

    removed = await api.post(f"{KEYS}/pdl/remove", data={"csrf_token": token})
    assert removed.status_code == 200
    assert "Your People Data Labs key was removed." in visible_text(removed.text)
    assert await stored_keys(db, team.admin.client_id) == {"apollo": "zyxw"}
    twice = await api.post(f"{KEYS}/pdl/remove", data={"csrf_token": token})
    assert "You had no People Data Labs key to remove." in visible_text(twice.text)
    # Another client's keys are its own.
    other = await make_tenant(db, SECRET, name="Other")
    assert await stored_keys(db, other.client_id) == {}


async def test_a_key_the_provider_refused_says_so_until_a_new_one_is_saved(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    await api.post(f"{KEYS}/pdl", data={"csrf_token": token, "api_key": PDL_KEY})
    async with db.unit_of_work() as session:
        await session.execute(
            update(ClientProviderKey)
            .where(ClientProviderKey.client_id == team.admin.client_id)
            .values(refused_at=utcnow(), refused_reason="out of credits (HTTP 402)")
        )
    page = visible_text((await api.get("/app/account")).text)
    assert "People Data Labs refused this key on " in page
    assert "(out of credits (HTTP 402)): enrichment goes on without it" in page
    saved = await api.post(f"{KEYS}/pdl", data={"csrf_token": token, "api_key": "pdl-New-4321"})
    assert "refused this key" not in saved.text and "•••• 4321" in saved.text


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("   ", "The API key is empty."),
        ("Qz7x", "The API key is too short: at least 8 characters."),
        ("pdl-Secret key-0123", "The API key has a space, a line break or a control character"),
        ("k" * 501, "The API key is too long: at most 500 characters."),
    ],
)
async def test_a_wrong_key_is_refused_on_the_page_without_showing_it(
    api: httpx.AsyncClient, db: Database, team: Team, typed: str, message: str
) -> None:
    token = await sign_in(api, team.admin_email)
    refused = await api.post(f"{KEYS}/pdl", data={"csrf_token": token, "api_key": typed})
    assert refused.status_code == 400
    keys = section(refused.text, "provider-keys-heading")
    assert message in html.unescape(keys)
    assert 'aria-invalid="true" aria-describedby="provider-key-1-error"' in keys
    assert f'action="{KEYS}/pdl"' in keys  # the form, to try again
    if typed.strip():
        assert typed not in refused.text
    assert await stored_keys(db, team.admin.client_id) == {}


async def test_the_forms_need_their_csrf_token_and_a_known_provider(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    for path, data in (
        (f"{KEYS}/pdl", {"api_key": PDL_KEY}),
        (f"{KEYS}/pdl/remove", {}),
        (ORDER, {"place_1": "history", "place_2": "pdl", "place_3": "directory"}),
        (f"{ORDER}/reset", {}),
    ):
        assert (await api.post(path, data=data)).status_code == 403, path
    for path in (f"{KEYS}/zoominfo", f"{KEYS}/PDL", f"{KEYS}/history/remove"):
        answer = await api.post(path, data={"csrf_token": token, "api_key": PDL_KEY})
        assert answer.status_code == 404, path
    assert await stored_keys(db, team.admin.client_id) == {}
    assert await stored_order(db, team.admin.client_id) is None


async def test_an_admin_sets_and_resets_the_order_of_sources(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    page = await api.get("/app/account")
    order = section(page.text, "order-heading")
    shown = visible_text(order)
    assert "in the default order" in shown
    listed = re.findall(r"<li>([^<]+)</li>", order)
    assert listed == ["People Data Labs", "Your earlier contacts", "Imported directory"]
    # One choice per place, each offering only the operator's sources.
    assert order.count("<select") == 3
    for place in (1, 2, 3):
        assert f'<label for="place-{place}">' in order
    assert "Apollo" not in shown
    assert "Reset to default order" not in shown

    chosen = {"place_1": "directory", "place_2": "pdl", "place_3": "history"}
    saved = await api.post(ORDER, data={"csrf_token": token, **chosen})
    assert saved.status_code == 200, saved.text
    assert "The order is saved." in visible_text(saved.text)
    order = section(saved.text, "order-heading")
    assert re.findall(r"<li>([^<]+)</li>", order) == [
        "Imported directory",
        "People Data Labs",
        "Your earlier contacts",
    ]
    assert "in the order your team chose" in visible_text(order)
    assert "Reset to default order" in order
    assert await stored_order(db, team.admin.client_id) == ["directory", "pdl", "history"]

    twice = {"place_1": "pdl", "place_2": "pdl", "place_3": "history"}
    refused = await api.post(ORDER, data={"csrf_token": token, **twice})
    assert refused.status_code == 400
    order = section(refused.text, "order-heading")
    assert "People Data Labs is chosen more than once: choose each source once." in order
    # The form as sent, to correct.
    picked = re.findall(r'<option value="(\w+)" selected>', order)
    assert picked == ["pdl", "pdl", "history"]
    for wrong in ({"place_1": "apollo", "place_2": "pdl", "place_3": "history"}, {}):
        refused = await api.post(ORDER, data={"csrf_token": token, **wrong})
        assert refused.status_code == 400
        assert "Choose a source for each place." in refused.text
    assert await stored_order(db, team.admin.client_id) == ["directory", "pdl", "history"]

    reset = await api.post(f"{ORDER}/reset", data={"csrf_token": token})
    assert reset.status_code == 200
    assert "The default order is back." in visible_text(reset.text)
    assert await stored_order(db, team.admin.client_id) is None
    order = section(reset.text, "order-heading")
    assert re.findall(r"<li>([^<]+)</li>", order)[0] == "People Data Labs"


async def test_a_member_sees_the_keys_and_order_but_changes_nothing(
    api: httpx.AsyncClient, db: Database, team: Team, settings: Settings
) -> None:
    async with db.unit_of_work() as session:
        await cs.set_provider_key(
            session,
            client_id=team.admin.client_id,
            provider="apollo",
            api_key=APOLLO_KEY,
            server_secret=SECRET,
            user_id=team.admin.user_id,
            now=utcnow(),
        )
        await cs.set_enrichment_order(
            session, client_id=team.admin.client_id, order=["history"], settings=settings
        )
    token = await sign_in(api, team.member_email)
    page = await api.get("/app/account")
    keys = section(page.text, "provider-keys-heading")
    assert "•••• zyxw" in visible_text(keys) and APOLLO_KEY not in page.text
    assert "An administrator of your team sets and removes these keys." in visible_text(keys)
    order = section(page.text, "order-heading")
    assert re.findall(r"<li>([^<]+)</li>", order) == [
        "Your earlier contacts",
        "People Data Labs",
        "Imported directory",
    ]
    for part in (keys, order):
        assert "<form" not in part and "<input" not in part and "<select" not in part

    for path, data in (
        (f"{KEYS}/pdl", {"api_key": PDL_KEY}),
        (f"{KEYS}/apollo/remove", {}),
        (ORDER, {"place_1": "directory", "place_2": "pdl", "place_3": "history"}),
        (f"{ORDER}/reset", {}),
    ):
        answer = await api.post(path, data={"csrf_token": token, **data})
        assert answer.status_code == 404, path
    assert await stored_keys(db, team.admin.client_id) == {"apollo": "zyxw"}
    assert await stored_order(db, team.admin.client_id) == ["history"]


async def test_the_page_shows_no_code_names(
    api: httpx.AsyncClient, db: Database, team: Team
) -> None:
    token = await sign_in(api, team.admin_email)
    await api.post(f"{KEYS}/apollo", data={"csrf_token": token, "api_key": APOLLO_KEY})
    answers = [
        await api.get("/app/account"),
        await api.post(f"{KEYS}/pdl", data={"csrf_token": token, "api_key": "bad key here"}),
        await api.post(ORDER, data={"csrf_token": token, "place_1": "pdl", "place_2": "pdl"}),
    ]
    for answer in answers:
        text = visible_text(answer.text)
        for code in ("pdl", "apollo", "enrichment_order", "api_key", "place_", "provider-key"):
            assert not re.search(rf"\b{code}", text), (code, answer.request.url)
