"""The results CSV's columns and cells, without a database."""

from __future__ import annotations

import csv
import io
from typing import Any

from dialscore.dashboard.csvout import API_FIELDS, Layout, phone_columns, safe_cell, stream
from dialscore.jobs.repository import ResultRow


def _phone(number: str, status: str | None, kind: str, country: str = "US") -> dict[str, Any]:
    return {"number": number, "status": status, "type": kind, "country": country}


def _row(**overrides: Any) -> ResultRow:
    values: dict[str, Any] = {
        "ordinal": 1,
        "fields": {},
        "phones": [],
        "best_phone": None,
        "lead_status": "Uncontacted",
        "source_row": None,
    }
    values.update(overrides)
    return ResultRow(**values)


def test_phone_columns_name_each_group_in_order() -> None:
    assert phone_columns(2) == [
        "phone", "phoneStatus", "phoneType", "phoneCountry",
        "phone2", "phone2Status", "phone2Type", "phone2Country",
    ]  # fmt: skip
    assert phone_columns(7)[-4:] == ["phone7", "phone7Status", "phone7Type", "phone7Country"]


def test_an_upload_keeps_its_columns_then_phones_then_best_phone_and_lead_status() -> None:
    layout = Layout(["First Name", "Mobile", "Notes"], groups=6)
    assert layout.header == [
        "First Name", "Mobile", "Notes", *phone_columns(6),
        "bestPhone", "bestPhoneStatus", "leadStatus",
    ]  # fmt: skip
    phones = [_phone(f"+1415555010{i}", "p2", "direct") for i in range(5)]
    phones.append(_phone("+14155550199", "p1", "Service Enriched Phone 1"))
    row = layout.row(
        _row(
            source_row=["Ann", "(415) 555-0100", "call after 5"],
            phones=phones,
            best_phone={"number": "+14155550199", "status": "p1"},
            lead_status="P1",
        )
    )
    assert len(row) == len(layout.header)
    cells = dict(zip(layout.header, row, strict=True))
    assert cells["First Name"] == "Ann" and cells["Mobile"] == "(415) 555-0100"
    assert cells["phone"] == "+14155550100" and cells["phone5Status"] == "p2"
    assert cells["phone6"] == "+14155550199"
    assert cells["phone6Type"] == "Service Enriched Phone 1"
    assert (cells["bestPhone"], cells["bestPhoneStatus"], cells["leadStatus"]) == (
        "+14155550199",
        "p1",
        "P1",
    )


def test_short_source_rows_and_missing_phones_leave_empty_cells() -> None:
    layout = Layout(["a", "b", "c"], groups=2)
    row = layout.row(_row(source_row=["1"], phones=[_phone("+14155550100", None, "mobile")]))
    assert row == [
        "1",
        "",
        "",
        "+14155550100",
        "",
        "mobile",
        "US",
        "",
        "",
        "",
        "",
        "",
        "",
        "Uncontacted",
    ]


def test_an_api_job_starts_with_the_contact_input_fields() -> None:
    layout = Layout(None, groups=1)
    assert layout.header[: len(API_FIELDS)] == list(API_FIELDS)
    assert API_FIELDS[:3] == ("firstName", "lastName", "email")
    # The submitted phone slots are the phone columns, from ``phones``: never twice.
    assert layout.header.count("phone") == 1 and "phone2Type" not in layout.header
    assert "phoneExt" in layout.header and "linkedInUrl" in layout.header
    row = layout.row(_row(fields={"firstName": "Bo", "companyAccount": "Acme", "phone": "x"}))
    cells = dict(zip(layout.header, row, strict=True))
    assert (cells["firstName"], cells["companyAccount"], cells["title"]) == ("Bo", "Acme", "")


def test_formulas_are_defused_but_numbers_are_not() -> None:
    for formula in (
        '=HYPERLINK("http://x")',
        "@SUM(A1)",
        "+cmd|' /C calc'!A0",
        "-2+3*cmd|x",
        "\t=1",
    ):
        assert safe_cell(formula) == "'" + formula
    for number in ("+14155550100", "+1 (415) 555-0100", "-12.5", "+44 20 7946 0958", "0044"):
        assert safe_cell(number) == number
    assert safe_cell(None) == "" and safe_cell("Ann") == "Ann"


async def test_the_stream_sends_the_header_first_then_a_chunk_per_batch() -> None:
    layout = Layout(["Name"], groups=1)

    async def batches() -> Any:
        yield [_row(ordinal=1, source_row=['Ann, "Jr"']), _row(ordinal=2, source_row=["Bé"])]
        yield [_row(ordinal=3, source_row=["=1+1"])]

    chunks = [chunk async for chunk in stream(layout, batches())]
    assert len(chunks) == 3
    assert chunks[0].startswith(b"\xef\xbb\xbf")
    text = b"".join(chunks).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == layout.header
    assert [r[0] for r in rows[1:]] == ['Ann, "Jr"', "Bé", "'=1+1"]
