"""The Enrichment sources page over HTTP, on both databases (P205): the figures of the
enrichment report per source under the names people know, the contacts no source found a
number for, the totals, what each column means, the period chosen on a plain form, a plain
sentence when there were no enrichment jobs, and no internal word."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import httpx
import pytest

from dialscore.dashboard import enrichment_sources
from dialscore.dashboard.words import words
from dialscore.kit.db import Database
from tests.conftest import SECRET
from tests.support import Tenant, make_tenant
from tests.test_enrichment_report import seed, seed_other_client
from tests.web_forms import sign_in_user

PAGE = "/app/enrichment-sources"


def text_of(fragment: str) -> str:
    """What a person reads of an HTML fragment: no tags, entities decoded, spaces plain."""
    plain = html.unescape(re.sub(r"<[^>]+>", " ", fragment)).replace("\u00a0", " ")
    return re.sub(r"\s+", " ", plain).strip()


def table(page: str) -> dict[str, dict[str, str]]:
    """Each row of the sources table by the name it shows: its figures by name."""
    found = {}
    for body in re.findall(r'<tr data-row="\w+">(.*?)</tr>', page, re.S):
        cells = dict(re.findall(r'data-figure="(\w+)">(.*?)</t[dh]>', body, re.S))
        name = text_of(cells.pop("source"))
        found[name] = {k: text_of(v) for k, v in cells.items()}
    return found


def sentence(page: str, marker: str) -> str:
    found = re.search(rf"<p[^>]* {marker}>(.*?)</p>", page, re.S)
    assert found is not None, marker
    return text_of(found.group(1))


async def test_the_page_shows_each_sources_figures_under_its_name(
    api: httpx.AsyncClient, db: Database, tenant: Tenant
) -> None:
    at = await seed(db, tenant)
    await seed_other_client(db, at)
    await sign_in_user(api, db, tenant.user_id)
    answer = await api.get(PAGE)
    assert answer.status_code == 200, answer.text
    page = answer.text
    assert '<a href="/app/enrichment-sources">Enrichment sources</a>' in page
    assert '<a href="/app/account#enrichment-order">Change the order sources are tried in</a>' in (
        page
    )
    shown = table(page)
    assert list(shown) == [
        "Your earlier contacts",
        "Imported directory",
        "People Data Labs (your key)",
        "Apollo",
        "No source found a number",
        "All contacts",
    ]
    assert shown["Your earlier contacts"] == {
        "tried": "19",
        "found": "9 (47.4 %)",
        "charged": "0.1833",
        "refunded": "0",
        "calls": "2",
        "reached": "50 % of 2 calls",
    }
    assert shown["Imported directory"]["found"] == "1 (10 %)"
    assert (shown["Imported directory"]["calls"], shown["Imported directory"]["reached"]) == (
        "0",
        "—",
    )
    assert shown["People Data Labs (your key)"] == {
        "tried": "6",
        "found": "2 (33.3 %)",
        "charged": "0.1",
        "refunded": "0.1",
        "calls": "1",
        "reached": "0 % of 1 call",
    }
    assert shown["Apollo"]["charged"] == "0.1166"
    assert shown["Apollo"]["reached"] == "33.3 % of 3 calls"
    assert shown["No source found a number"] == {
        "tried": "4",
        "found": "—",
        "charged": "—",
        "refunded": "0.1833",
        "calls": "—",
        "reached": "—",
    }
    assert shown["All contacts"]["tried"] == "14"
    assert (shown["All contacts"]["charged"], shown["All contacts"]["refunded"]) == (
        "0.6332",
        "0.2833",
    )
    assert sentence(page, "data-summary") == (
        "2 enrichment jobs with 14 contacts: 0.6332 credits charged, 0.2833 refunded."
    )
    assert sentence(page, "data-order").startswith(
        "Your sources are tried in this order: Your earlier contacts, Imported directory, "
        "People Data Labs, Apollo."
    )
    # Accessible: a caption, headers of columns and of rows.
    assert "<caption>" in page
    assert page.count('<th scope="col">') == len(words().enrichment_columns)
    assert page.count('<th scope="row"') == 6
    # What each column means, in words; no internal word is shown.
    visible = text_of(re.sub(r"<(script|style)[^>]*>.*?</\1>", "", page, flags=re.S))
    for column in words().enrichment_columns.values():
        assert text_of(column.sentence) in visible
    for internal in ("pdl", "apollo", "history", "ownKey", "own_key", "named", "unfound"):
        assert internal not in visible, internal


async def test_the_period_is_chosen_from_a_plain_form(
    api: httpx.AsyncClient, db: Database, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = await seed(db, tenant)
    await sign_in_user(api, db, tenant.user_id)
    today = at.now.date()
    page = (await api.get(PAGE)).text
    assert f'name="from" value="{today - timedelta(days=30)}"' in page
    assert f'name="to" value="{today}"' in page
    # The day of the second job alone (both days are included).
    second = at.second.date()
    page = (await api.get(PAGE, params={"from": str(second), "to": str(second)})).text
    assert f'name="from" value="{second}"' in page
    shown = table(page)
    assert shown["Your earlier contacts"]["tried"] == "4"
    assert shown["All contacts"]["tried"] == "4"
    # From 41 days ago: the old job too.
    start = today - timedelta(days=41)
    page = (await api.get(PAGE, params={"from": str(start)})).text
    assert table(page)["Your earlier contacts"]["tried"] == "119"
    # Days that cannot be used show the last 30 days and say so, never an error.
    for params in (
        {"from": "yesterday"},
        {"from": str(today), "to": str(today - timedelta(days=1))},
        {"from": str(today - timedelta(days=400)), "to": str(today)},
    ):
        answer = await api.get(PAGE, params=params)
        assert answer.status_code == 200
        assert "could not be used" in sentence(answer.text, 'role="alert" data-refused')
        assert f'name="from" value="{today - timedelta(days=30)}"' in answer.text
        assert table(answer.text)["Your earlier contacts"]["tried"] == "19"


async def test_without_enrichment_jobs_it_says_so(api: httpx.AsyncClient, db: Database) -> None:
    tenant = await make_tenant(db, SECRET, name="Newcomer")
    await sign_in_user(api, db, tenant.user_id)
    page = (await api.get(PAGE)).text
    assert sentence(page, "data-empty").startswith("No enrichment jobs were sent in this period.")
    assert "<table" not in page
    assert "Change the order sources are tried in" in page


async def test_signed_out_it_asks_to_sign_in(api: httpx.AsyncClient) -> None:
    answer = await api.get(PAGE, params={"from": "2026-11-01"})
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/app/sign-in?next=/app/enrichment-sources")


def test_a_source_is_named_as_people_know_it() -> None:
    assert enrichment_sources.source_name("pdl", True) == "People Data Labs (your key)"
    assert enrichment_sources.source_name("history", False) == "Your earlier contacts"
