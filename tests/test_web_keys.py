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
    page.get_by_label("Monthly credit limit (optional)").fill("500")
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
        assert response.json()["data"]["key"] == {"monthlyCreditLimit": 500, "spentThisMonth": 0}

        row = page.get_by_role("row").filter(has_text="CRM sync")
        expect(row).to_contain_text(team.admin_email)
        expect(row).to_contain_text("active")
        expect(row).to_contain_text("0 of 500 credits")
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


def test_a_user_added_in_the_browser_sets_a_password_from_the_link(page: Page, team: Team) -> None:
    sign_in(page, team.admin_email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Users").click()
    page.get_by_label("Email").fill("dee@acme.example")
    page.get_by_label("Role", exact=True).select_option("member")
    page.get_by_role("button", name="Add user").click()
    field = page.get_by_role("textbox", name="Password link")
    expect(field).to_have_attribute("readonly", "")
    link = field.input_value()
    assert link.startswith(f"{team.base_url}/app/set-password/"), link
    row = page.get_by_role("row").filter(has_text="dee@acme.example")
    expect(row).to_contain_text("no password yet")

    newcomer = page.context.browser
    assert newcomer is not None
    context = newcomer.new_context(base_url=team.base_url)
    try:
        other = context.new_page()
        other.goto(link)
        other.get_by_label("New password", exact=True).fill("dee's long password")
        other.get_by_label("New password again").fill("dee's long password")
        other.get_by_role("button", name="Set password").click()
        expect(other.get_by_role("status")).to_contain_text("Your password is set")
        sign_in(other, "dee@acme.example", "dee's long password")
        other.goto(link)
        expect(other.get_by_role("alert")).to_contain_text("This link is not valid")
    finally:
        context.close()
    page.reload()
    expect(page.get_by_role("row").filter(has_text="dee@acme.example")).to_contain_text("active")
