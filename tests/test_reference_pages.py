"""/docs (Swagger UI) and /redoc (Redoc) ask nothing of the internet: their pages name no other
address, their policy lets a browser load nothing from elsewhere, and in a real browser every
request they make goes to the service itself (P96)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from importlib import resources

import httpx
import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from dialscore.app import REDOC_LOGO, create_app
from dialscore.config import Settings
from tests.browser import Team

PAGES = ["/docs", "/redoc"]
# What a source list may hold: the service itself, and what a page makes on its own.
OWN_SOURCES = {"'self'", "'unsafe-inline'", "data:", "blob:"}


@pytest.fixture
async def pages(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(settings, run_worker=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://docs.test") as client:
        yield client


def policy_of(response: httpx.Response) -> dict[str, list[str]]:
    header = response.headers.get("content-security-policy")
    assert header, f"{response.url} has no Content-Security-Policy"
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {words[0]: words[1:] for words in directives}


@pytest.mark.parametrize("path", PAGES)
async def test_the_pages_name_and_allow_nothing_but_the_service(
    pages: httpx.AsyncClient, path: str
) -> None:
    page = await pages.get(path)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    addresses = re.findall(r"""https?://[^\s"'<>)]+""", page.text)
    assert [a for a in addresses if not a.startswith("http://docs.test/")] == [], addresses
    policy = policy_of(page)
    assert policy["default-src"] == ["'self'"], policy
    for directive, sources in policy.items():
        assert set(sources) <= OWN_SOURCES, (directive, sources)
    # A script or style from anywhere but the service would be refused, not just not named.
    assert "'self'" in policy["script-src"] and "'self'" in policy["img-src"]


async def test_redoc_loads_its_bundle_without_the_cdn_logo(pages: httpx.AsyncClient) -> None:
    page = await pages.get("/redoc")
    scripts = re.findall(r'<script src="([^"]+)"', page.text)
    assert len(scripts) == 1 and scripts[0].startswith("/"), scripts
    bundle = await pages.get(scripts[0])
    assert bundle.status_code == 200
    assert bundle.headers["content-type"].startswith("text/javascript")
    package = resources.files("fastapi_offline").joinpath("static", "redoc.standalone.js")
    original = package.read_text(encoding="utf-8")
    # The package's bundle has the logo (else this test would check nothing); the one served
    # has the package's code with that address alone taken out.
    assert REDOC_LOGO in original and "cdn.redoc.ly" not in bundle.text
    assert bundle.text == original.replace(REDOC_LOGO, "data:,")
    assert (await pages.head(scripts[0])).status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("path", PAGES)
def test_a_browser_loads_the_pages_from_the_service_alone(
    page: Page, team: Team, path: str
) -> None:
    requested: list[str] = []
    problems: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("pageerror", lambda error: problems.append(str(error)))

    def note_error(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(message.text)

    page.on("console", note_error)
    page.goto(path)
    # The reference is drawn: the description of the document, from /openapi.json.
    description = page.get_by_text("Rates how reachable a sales contact is by phone")
    expect(description.first).to_be_visible()
    page.wait_for_load_state("networkidle")
    outside = [
        url
        for url in requested
        if not url.startswith((f"{team.base_url}/", "data:", f"blob:{team.base_url}/"))
    ]
    assert outside == [], outside
    assert f"{team.base_url}/openapi.json" in requested
    # Nothing was even tried and refused (the browser reports a refused load as an error).
    assert problems == [], problems
