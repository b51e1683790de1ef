"""Each CRM's contact export, uploaded in a real browser as a sales team exports it: the
mapping comes pre-filled as a person would choose, the job runs, and the results hold every
column of the file with the right numbers scored, and go back into the CRM by ID."""

from __future__ import annotations

import csv
import io
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from dialscore.dashboard import csvin
from dialscore.phones import analyse, country_or_default
from dialscore.scoring.numbers import PHONE_SLOTS
from tests.browser import Team, sign_in

CRM = Path(__file__).parent / "data" / "crm"
EXPECTED = tomllib.loads((CRM / "expected.toml").read_text(encoding="utf-8"))
JOB_URL = re.compile(r"/app/jobs/([0-9a-f-]{36})$")


def scored_numbers(phones: dict[str, str]) -> list[str]:
    """The numbers a contact's phone slots hold, in slot order, as scoring writes them."""
    numbers = []
    for slot in PHONE_SLOTS:
        if slot in phones:
            found = analyse(phones[slot], country_or_default(phones.get(f"{slot}Country")))
            assert found is not None, phones[slot]
            numbers.append(found.e164)
    return numbers


def download(page: Page, name: str) -> list[dict[str, str]]:
    with page.expect_download() as info:
        page.get_by_role("link", name=name).click()
    text = Path(info.value.path()).read_text(encoding="utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_crm_export_is_mapped_scored_and_given_back(page: Page, team: Team, name: str) -> None:
    expected: dict[str, Any] = EXPECTED[name]
    table = csvin.read_table((CRM / name).read_bytes(), max_rows=100)
    sign_in(page, team.admin_email)
    page.goto("/app/upload")
    page.get_by_label("Contact list (CSV)").set_input_files(CRM / name)
    page.get_by_role("button", name="Continue").click()

    # Pre-filled as a person would choose, with the column's first cells beside each choice.
    expect(page.get_by_role("heading", name=f"Map the columns of {name}")).to_be_visible()
    # The whole page, not the part parsed when its heading showed.
    page.wait_for_load_state("load")
    chosen = page.eval_on_selector_all(
        "select[id^=column-]", "all => all.map(s => [s.labels[0].textContent, s.value])"
    )
    assert [tuple(pair) for pair in chosen] == list(expected["mapping"].items())
    if expected["footer"]:
        expect(page.get_by_text(re.compile("a report\u2019s footer"))).to_be_visible()
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#contacts-found")).to_have_text(str(expected["rows"]))
    page.get_by_role("button", name="Start job").click()
    expect(page).to_have_url(JOB_URL)

    rows = download_when_finished(page)
    # Every column of the file, in its order, each cell as it came; then dialscore's.
    header = list(rows[0])
    assert header[: len(table.header)] == table.header
    assert all(column.startswith("dialscore ") for column in header[len(table.header) :])
    assert [[r[c] for c in table.header] for r in rows] == [
        row[: len(table.header)] for row in table.rows
    ]
    mapping: dict[str, str] = expected["mapping"]
    first = next(c for c, choice in mapping.items() if choice == "firstName")
    last = next(c for c, choice in mapping.items() if choice == "lastName")
    by_person = {f"{r[first]} {r[last]}": r for r in rows}
    for person, phones in expected["phones"].items():
        row = by_person[person]
        numbers = [
            row[f"dialscore Phone {n}"] for n in range(1, 6) if f"dialscore Phone {n}" in row
        ]
        assert [n for n in numbers if n] == scored_numbers(phones), person
        assert row["dialscore Lead Status"] in ("P1", "P2", "P3"), person

    # For a re-import by ID: the file's phone columns hold the numbers as scored.
    again = download(page, "Download for re-import into your CRM (CSV)")
    phone_columns = [c for c, choice in expected["mapping"].items() if choice.startswith("phone:")]
    assert list(again[0])[-2 * len(phone_columns) :] == [
        f"dialscore {c} {part}" for c in phone_columns for part in ("Status", "Reasons")
    ]
    for person, phones in expected["phones"].items():
        row = next(r for r in again if f"{r[first]} {r[last]}" == person)
        given = [(c, by_person[person][c]) for c in phone_columns if by_person[person][c]]
        assert len(given) == len(scored_numbers(phones)), person
        for (column, original), number in zip(given, scored_numbers(phones), strict=True):
            # E.164 cannot carry an extension: such a cell is left as the file had it.
            extension = re.search(r"(x|ext|#)\S*\s*\d+\s*$", original, re.IGNORECASE)
            assert row[column] == number or (row[column] == original and extension), person
            assert row[f"dialscore {column} Status"], (person, column)


def download_when_finished(page: Page) -> list[dict[str, str]]:
    link = page.get_by_role("link", name="Download results (CSV)")
    expect(link).to_be_visible(timeout=60_000)
    return download(page, "Download results (CSV)")
