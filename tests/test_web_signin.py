"""Signing in to the web app and out again, in a real browser."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser import PASSWORD, Team, sign_in


def test_sign_in_and_out(page: Page, team: Team) -> None:
    page.goto("/app/jobs")
    expect(page).to_have_url(re.compile(r"/app/sign-in\?next=/app/jobs$"))
    sign_in(page, team.admin_email)
    expect(page).to_have_url(re.compile(r"/app/jobs$"))
    expect(page.get_by_role("heading", name="Jobs")).to_be_visible()
    cookie = next(c for c in page.context.cookies() if c["name"] == "dialscore_session")
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["secure"]) == (True, "Lax", False)

    # One click: the header's button sends the sign-out form with the session's CSRF token.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    # The old cookie, sent again, no longer opens a page: the session ended on the server.
    page.context.add_cookies([{**cookie}])  # type: ignore[list-item]
    page.goto("/app/jobs")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_a_wrong_password_is_refused_and_the_email_kept(page: Page, team: Team) -> None:
    page.goto("/app/sign-in")
    page.get_by_label("Email").fill(team.member_email)
    page.get_by_label("Password").fill(PASSWORD + "!")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("The email or password is not right.")
    expect(page.get_by_label("Email")).to_have_value(team.member_email)
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)


def test_a_member_sees_no_admin_pages(page: Page, team: Team) -> None:
    sign_in(page, team.member_email)
    nav = page.get_by_role("navigation", name="Main")
    for name in ("Jobs", "Upload", "Webhooks", "Account"):
        expect(nav.get_by_role("link", name=name, exact=True)).to_be_visible()
    for name in ("API keys", "Users"):
        expect(nav.get_by_role("link", name=name)).to_have_count(0)
    for path in ("/app/keys", "/app/users"):
        response = page.goto(path)
        assert response is not None and response.status == 404


def test_a_form_sent_without_its_token_is_refused(page: Page, team: Team) -> None:
    sign_in(page, team.member_email)
    # The browser's own cookies, but not the session's CSRF token: a forged form.
    forged = page.request.post("/app/sign-out", form={"csrf_token": "forged"})
    assert forged.status == 403
    assert "This form has expired" in forged.text()
    page.goto("/app/jobs")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
