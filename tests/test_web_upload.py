"""Uploading a contact list in a real browser: a spreadsheet's export with messy headers, a
semicolon separator and a BOM is mapped, its cost shown, its job started; a rejected row is
downloaded with its reason; a file of 50,000 rows goes through the same steps."""

from __future__ import annotations

import csv
import io
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser import Team, sign_in

MESSY = (
    "\ufeff FIRST name ;Last;Cell;Account Name;Direct Dial;E-mail Address;Region notes\r\n"
    "Ada;Lovelace;+1 415 555 2671;Engines Ltd;;ada@engines.example;west\r\n"
    "Bob;Stone;33612345678;Stone Co;+1 (415) 555-2672;;\r\n"
)
JOB_URL = re.compile(r"/app/jobs/([0-9a-f-]{36})$")


def upload(page: Page, path: Path) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Upload").click()
    page.get_by_label("Contact list (CSV)").set_input_files(path)
    page.get_by_role("button", name="Continue").click()


def api_job(team: Team, job_id: str) -> dict[str, object]:
    answer = httpx.get(
        f"{team.base_url}/api/public/v2/jobs/{job_id}", headers=team.admin.headers, timeout=60
    )
    assert answer.status_code == 200
    data: dict[str, object] = answer.json()["data"]
    return data


def api_contacts(team: Team, job_id: str) -> list[dict[str, Any]]:
    answer = httpx.get(
        f"{team.base_url}/api/public/v2/jobs/{job_id}/contacts",
        headers=team.admin.headers,
        timeout=60,
    )
    assert answer.status_code == 200
    contacts: list[dict[str, Any]] = answer.json()["data"]["contacts"]
    return contacts


def test_a_messy_export_is_mapped_priced_and_started(
    page: Page, team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "Spring fair.csv"
    path.write_bytes(MESSY.encode())
    sign_in(page, team.admin_email)
    upload(page, path)

    expect(page.get_by_role("heading", name="Map the columns of Spring fair.csv")).to_be_visible()
    expect(page.get_by_label("FIRST name")).to_have_value("firstName")
    # Each phone column is a phone of the type its name tells.
    expect(page.get_by_label("Cell")).to_have_value("phone:mobile")
    expect(page.get_by_label("Direct Dial")).to_have_value("phone:direct")
    expect(page.get_by_label("Account Name")).to_have_value("companyAccount")
    expect(page.get_by_label("E-mail Address")).to_have_value("email")
    expect(page.get_by_label("Region notes")).to_have_value("extra")
    expect(page.get_by_text("Lovelace", exact=True)).to_be_visible()
    page.get_by_label("Region notes").select_option(label="Leave out")
    page.get_by_role("button", name="Continue").click()

    expect(page.get_by_role("radio", name="Score")).to_be_checked()
    expect(page.get_by_role("radio", name="Enrich")).to_be_visible()
    # Three valid distinct phones at the business plan's price; nothing charged yet.
    expect(page.locator("#phones-found")).to_have_text("3")
    expect(page.locator("#contacts-found")).to_have_text("2")
    expect(page.locator("#cost")).to_contain_text("0.15 credits")
    expect(page.get_by_role("cell", name=re.compile("lost its leading \\+"))).to_be_visible()
    page.get_by_role("button", name="Start job").click()

    expect(page).to_have_url(JOB_URL)
    match = JOB_URL.search(page.url)
    assert match is not None
    job = api_job(team, match.group(1))
    assert (job["jobSource"], job["name"], job["acceptedRecordCount"]) == (
        "app",
        "Spring fair.csv",
        2,
    )

    # The page follows the job until it is finished, then offers its results.
    download_link = page.get_by_role("link", name="Download results (CSV)")
    expect(download_link).to_be_visible(timeout=60_000)
    with page.expect_download() as download:
        download_link.click()
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text("utf-8-sig"))))
    header = list(rows[0])
    # The file's columns as they were (names trimmed; the ignored one too), then the results.
    assert header[:7] == [
        "FIRST name", "Last", "Cell", "Account Name", "Direct Dial", "E-mail Address",
        "Region notes",
    ]  # fmt: skip
    assert header[7] == "dialscore Lead Status"
    assert [r["Last"] for r in rows] == ["Lovelace", "Stone"]
    contacts = api_contacts(team, match.group(1))
    for row, contact in zip(rows, contacts, strict=True):
        assert row["dialscore Lead Status"] == contact["leadStatus"]
        groups = [n for n in range(1, 10) if f"dialscore Phone {n}" in row]
        phones = [(row[f"dialscore Phone {n}"], row[f"dialscore Phone {n} Status"]) for n in groups]
        sent = [(p["number"], p["status"]) for p in contact["phones"]]
        assert [p for p in phones if p[0]] == sent


def test_a_rejected_row_is_downloaded_with_its_reason(
    page: Page, team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "rejects.csv"
    path.write_text(
        "First,Last,Phone\r\nAda,Lovelace,4155552671\r\nBob,,4155552672\r\nCy,Ng,4.15555E+10\r\n",
        encoding="utf-8",
    )
    sign_in(page, team.admin_email)
    upload(page, path)
    page.get_by_role("button", name="Continue").click()
    expect(
        page.get_by_role("heading", name=re.compile("Rows that will be rejected"))
    ).to_be_visible()
    page.get_by_role("button", name="Start job").click()

    expect(page.get_by_role("heading", name="Job started")).to_be_visible()
    expect(page.get_by_role("cell", name="No last name")).to_be_visible()
    with page.expect_download() as info:
        page.get_by_role("link", name="Download rejected rows (CSV)").click()
    text = Path(info.value.path()).read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["First", "Last", "Phone", "dialscore Rejected Reason"]
    assert rows[1] == ["Bob", "", "4155552672", "No last name"]
    assert rows[2][:3] == ["Cy", "Ng", "4.15555E+10"] and "scientific notation" in rows[2][3]
    page.get_by_role("link", name="View the job").click()
    expect(page).to_have_url(JOB_URL)
    # The job keeps them: its page lists each with the person, the number and why.
    row = page.get_by_role("row", name=re.compile("Bob"))
    expect(row).to_contain_text("4155552672")
    expect(row).to_contain_text("No last name")


@pytest.mark.slow
def test_a_50000_row_upload_runs_to_its_end(page: Page, team: Team, tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    lines = ["First Name,Last Name,Mobile,Company"]
    lines += [
        f"F{i},L{i},+1 415 {200 + i // 10_000:03d} {i % 10_000:04d},Co {i}" for i in range(50_000)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sign_in(page, team.admin_email)
    began = time.monotonic()
    upload(page, path)
    page.get_by_role("button", name="Continue").click(timeout=60_000)
    expect(page.locator("#contacts-found")).to_have_text("50,000", timeout=60_000)
    priced = time.monotonic()
    page.get_by_role("button", name="Start job").click(timeout=120_000)
    expect(page).to_have_url(JOB_URL, timeout=120_000)
    started = time.monotonic()
    match = JOB_URL.search(page.url)
    assert match is not None
    assert api_job(team, match.group(1))["jobSource"] == "app"
    # The job runs to its end on the embedded worker; the page then offers its results.
    expect(page.get_by_role("link", name="Download results (CSV)")).to_be_visible(timeout=600_000)
    finished = time.monotonic()
    print(
        f"50,000 rows: priced in {priced - began:.1f} s, started {started - priced:.1f} s "
        f"later, finished {finished - started:.1f} s after that"
    )
    assert api_job(team, match.group(1))["status"] == "Finalized"
