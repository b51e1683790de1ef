"""The jobs pages in a real browser: a job submitted through the API, its page and results."""

from __future__ import annotations

import csv
import io
import sqlite3
import time
from contextlib import closing

import httpx
from playwright.sync_api import Dialog, Page, expect

from tests.browser import Team, sign_in
from tests.support import V2

SCRIPT = "<script>alert(1)</script>"


def _finished_job(team: Team, name: str) -> str:
    contacts = [
        {"firstName": SCRIPT, "lastName": "Quote", "phone": "+14155552671"},
        {"firstName": "Ann", "lastName": "Lee", "phone": "+14155550100", "phone2": "+442079460958"},
    ]
    with httpx.Client(base_url=team.base_url, headers=team.admin.headers, timeout=10) as api:
        answer = api.post(f"{V2}/contacts/score", json={"contacts": contacts, "name": name})
        assert answer.status_code in (200, 201), answer.text
        job_id: str = answer.json()["data"]["jobId"]
        deadline = time.monotonic() + 20
        while api.get(f"{V2}/jobs/{job_id}").json()["data"]["status"] != "Finalized":
            assert time.monotonic() < deadline, "the job did not finish"
            time.sleep(0.1)
    return job_id


def test_an_api_job_shows_with_its_summary_contacts_and_results(page: Page, team: Team) -> None:
    job_id = _finished_job(team, "Browser job")
    dialogs: list[Dialog] = []

    def refuse(dialog: Dialog) -> None:
        dialogs.append(dialog)
        dialog.dismiss()

    page.on("dialog", refuse)
    sign_in(page, team.admin_email)

    page.get_by_role("link", name="From the API").click()
    page.get_by_role("link", name="Browser job").click()
    expect(page.get_by_role("heading", name="Browser job")).to_be_visible()
    summary = page.get_by_role("region", name="Summary")
    expect(summary.get_by_text("Contacts by lead status")).to_be_visible()
    expect(summary.get_by_text("Phones by status")).to_be_visible()
    expect(page.get_by_text(f"{SCRIPT} Quote", exact=True)).to_be_visible()
    expect(page.get_by_text("Best phone", exact=True).first).to_be_visible()
    expect(page.locator("table.contacts tbody tr")).to_have_count(2)
    assert dialogs == []

    with page.expect_download() as download:
        page.get_by_role("link", name="Download results (CSV)").click()
    path = download.value.path()
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    with httpx.Client(base_url=team.base_url, headers=team.admin.headers, timeout=10) as api:
        wanted = api.get(f"{V2}/jobs/{job_id}/contacts").json()["data"]["contacts"]
    assert [r["firstName"] for r in rows] == [SCRIPT, "Ann"]
    assert [r["dialscore Lead Status"] for r in rows] == [c["leadStatus"] for c in wanted]
    assert [r["dialscore Phone 2 Status"] for r in rows] == [
        c["phones"][1]["status"] if len(c["phones"]) > 1 else "" for c in wanted
    ]


def _set_progress(team: Team, job_id: str, status: str, processed: int) -> None:
    """Puts the job back to a state of its run, as the worker writes it."""
    path = team.live.settings.resolved_database_url.removeprefix("sqlite:///")
    with closing(sqlite3.connect(path, timeout=30)) as db, db:
        db.execute(
            "UPDATE jobs SET status = ?, processed_count = ? WHERE id = ?",
            (status, processed, job_id),
        )


def test_progress_moves_without_reloading_the_page(page: Page, team: Team) -> None:
    job_id = _finished_job(team, "Moving job")
    _set_progress(team, job_id, "Processing", 1)
    sign_in(page, team.admin_email)
    page.goto(f"/app/jobs/{job_id}")
    expect(page.get_by_role("link", name="Download results (CSV)")).to_have_count(0)
    bar = page.get_by_role("progressbar", name="Progress")
    expect(bar).to_have_attribute("value", "1")
    page.evaluate("window.notReloaded = true")

    _set_progress(team, job_id, "Processing", 2)
    # The state in words, as the page shows it.
    expect(page.get_by_text("Running: 2 of 2")).to_be_visible()
    assert page.evaluate("window.notReloaded") is True
    expect(bar).to_have_js_property("value", 2)

    # Finished: the page reloads itself once, and offers the results.
    _set_progress(team, job_id, "Finalized", 2)
    expect(page.get_by_role("link", name="Download results (CSV)")).to_be_visible()
    page.goto("/app/jobs")
    expect(page.locator("[data-progress-url]")).to_have_count(0)
