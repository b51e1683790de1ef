"""Every page of the web app, filled as a team uses it, at a phone's width and a wide
screen's: none is wider than the screen, and axe-core finds no serious or critical
accessibility violation in any."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser import Team, sign_in
from tests.support import V2

WIDTHS = ((375, 812), (1440, 900))
BLOCKING = ("serious", "critical")
JOB_URL = re.compile(r"/app/jobs/([0-9a-f-]{36})$")
# A file name that does not break by itself, and rows the rules reject.
CONTACTS = (
    "First Name,Last Name,Mobile Phone Number,Phone Number,Company Name,Notes\n"
    "Ada,Lovelace,+1 415 555 2671,+1 212 555 0199 x12,Analytical_Engines_Limited,vip\n"
    "Bob,,4155552672,,Stone,\n"
    "Cy,Ng,4.15555E+10,,Ng plc,\n"
)


def problems(page: Page, axe: Axe, where: str) -> list[str]:
    """What is wrong with the page shown: wider than the screen, or an axe violation."""
    found = []
    wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    if wide > 0:
        found.append(f"{where}: {wide} px wider than the screen")
    for violation in axe.run(page).response["violations"]:
        if violation["impact"] in BLOCKING:
            targets = [", ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(f"{where}: {violation['id']} ({violation['impact']}) at {targets}")
    return found


def fill_the_team(page: Page, team: Team, tmp_path: Path) -> dict[str, str]:
    """A job from an uploaded file with rejected rows, calls reported to its numbers, an
    upload half done, a webhook and a key: the pages worth looking at, by name."""
    path = tmp_path / "Spring_fair_2026_contacts_export_final_v2.csv"
    path.write_text(CONTACTS, encoding="utf-8")
    pages: dict[str, str] = {"upload": "/app/upload"}
    page.goto("/app/upload")
    page.get_by_label("Contact list (CSV)").set_input_files(path)
    page.get_by_role("button", name="Continue").click()
    pages["mapping"] = page.url
    page.get_by_role("button", name="Continue").click()
    pages["action"] = page.url
    page.get_by_role("button", name="Start job").click()
    expect(page.get_by_role("heading", name="Job started")).to_be_visible()
    pages["started"] = page.url
    page.get_by_role("link", name="View the job").click()
    expect(page).to_have_url(JOB_URL)
    pages["job"] = page.url
    pages["job-delete"] = page.url + "/delete"
    expect(page.get_by_role("link", name="Download results (CSV)")).to_be_visible(timeout=60_000)
    # Calls to Ada's numbers after the scoring, enough for the accuracy page to judge and draw.
    calls = [{"number": "+14155552671", "outcome": "connected"}] * 3
    calls += [{"number": "+14155552671", "outcome": "no_answer"}] * 17
    calls += [{"number": "+12125550199", "outcome": "busy"}] * 5
    reported = httpx.post(
        f"{team.base_url}{V2}/calls", json={"calls": calls}, headers=team.admin.headers, timeout=10
    )
    assert reported.json()["data"]["acceptedRecordCount"] == len(calls), reported.text
    page.goto("/app/accuracy")
    expect(page.get_by_role("img", name="Share of calls that reached the person")).to_be_visible()

    page.goto("/app/webhooks")
    page.get_by_label("Name").fill("CRM")
    page.get_by_label("URL").fill("http://127.0.0.1:9/hooks/dialscore")
    page.get_by_role("button", name="Create webhook").click()
    pages["webhooks"] = "/app/webhooks"
    page.get_by_role("link", name="Delivery log").first.click()
    pages["webhook"] = page.url
    pages["webhook-delete"] = page.url + "/delete"

    page.goto("/app/keys")
    page.get_by_label("Label").fill("CRM sync")
    page.get_by_role("button", name="Create key").click()
    pages["keys"] = "/app/keys"
    action = page.locator("form[action$='/revoke']").first.get_attribute("action")
    assert action is not None
    pages["key-revoke"] = action
    page.goto("/app/users")
    pages["users"] = "/app/users"
    action = page.locator("form[action$='/deactivate']").first.get_attribute("action")
    assert action is not None
    pages["user-deactivate"] = action
    pages |= {
        "jobs": "/app/jobs",
        "calls": "/app/calls",
        "accuracy": "/app/accuracy",
        "enrichment-sources": "/app/enrichment-sources",
        "account": "/app/account",
        "sign-out": "/app/sign-out",
        "not-found": "/app/no-such-page",
    }
    return pages


def test_no_page_is_wider_than_the_screen_or_blocks_a_person_using_assistive_technology(
    page: Page, team: Team, chromium: Browser, tmp_path: Path
) -> None:
    axe = Axe()
    sign_in(page, team.admin_email)
    pages = fill_the_team(page, team, tmp_path)
    found: list[str] = []
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        for name, url in pages.items():
            page.goto(url)
            found += problems(page, axe, f"{name} at {width} px")
    signed_out = chromium.new_context(base_url=team.base_url)
    try:
        door = signed_out.new_page()
        for width, height in WIDTHS:
            door.set_viewport_size({"width": width, "height": height})
            door.goto("/app/sign-in")
            found += problems(door, axe, f"sign-in at {width} px")
    finally:
        signed_out.close()
    assert found == []
