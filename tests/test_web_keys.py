"""API keys in a real browser: a key made in the web app works on the API at once, and once
revoked there it answers 401 at once."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from tests.browser import Team, sign_in
from tests.support import V2


def test_a_key_made_in_the_browser_works_until_revoked(page: Page, team: Team) -> None:
    sign_in(page, team.admin_email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API keys").click()
    expect(page.get_by_role("heading", name="API keys", exact=True)).to_be_visible()

    page.get_by_label("Label").fill("CRM sync")
    page.get_by_role("button", name="Create key").click()
    field = page.get_by_label("API key", exact=True)
    expect(field).to_have_attribute("readonly", "")
    api_key = field.input_value()
    assert api_key.count(".") == 2, api_key
    expect(page.locator("button[data-copy=new-api-key]")).to_be_visible()

    url = f"{team.base_url}{V2}/account/credits"
    headers = {"Authorization": f"Bearer {api_key}"}
    with httpx.Client(timeout=10) as client:
        response = client.get(url, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["data"]["credits"] > 0

        row = page.get_by_role("row").filter(has_text="CRM sync")
        expect(row).to_contain_text(team.admin_email)
        expect(row).to_contain_text("active")
        row.get_by_role("button", name="Revoke").click()
        expect(page).to_have_url(re.compile(r"/app/keys/[0-9a-f-]+/revoke\??$"))
        page.get_by_role("button", name="Revoke key").click()
        expect(page.get_by_role("status")).to_contain_text("revoked")
        expect(page.get_by_role("row").filter(has_text="CRM sync")).to_contain_text("revoked")

        refused = client.get(url, headers=headers)
        assert refused.status_code == 401, refused.text
        assert "revoked" in refused.json()["error"]
    # The key string is never shown again.
    assert api_key not in page.content()
