"""The results CSV's columns and cells, without a database."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from typing import Any

from dialscore.dashboard.csvout import (
    API_FIELDS,
    Layout,
    Rejected,
    phone_column_names,
    safe_cell,
    stream,
)
from dialscore.dashboard.mapping import EXTRA, phone_choice
from dialscore.jobs.repository import ResultRow

SUMMARY = [
    "dialscore Lead Status",
    "dialscore Best Phone",
    "dialscore Best Phone Status",
    "dialscore Rejected Reason",
]


def _phone(
    number: str, status: str | None, kind: str, country: str = "US", reasons: Any = ()
) -> dict[str, Any]:
    return {
        "number": number,
        "status": status,
        "type": kind,
        "country": country,
        "reasons": list(reasons),
    }


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


def _cells(layout: Layout, row: list[str]) -> dict[str, str]:
    assert len(row) == len(layout.header)
    return dict(zip(layout.header, row, strict=True))


def test_phone_columns_name_each_group_in_order() -> None:
    assert phone_column_names(2) == [
        "dialscore Phone 1", "dialscore Phone 1 Status", "dialscore Phone 1 Type",
        "dialscore Phone 1 Country", "dialscore Phone 1 Reasons",
        "dialscore Phone 1 Time Zone", "dialscore Phone 1 Callable Now",
        "dialscore Phone 1 Next Callable At", "dialscore Phone 1 Best Call Hours",
        "dialscore Phone 2", "dialscore Phone 2 Status", "dialscore Phone 2 Type",
        "dialscore Phone 2 Country", "dialscore Phone 2 Reasons",
        "dialscore Phone 2 Time Zone", "dialscore Phone 2 Callable Now",
        "dialscore Phone 2 Next Callable At", "dialscore Phone 2 Best Call Hours",
    ]  # fmt: skip
    assert phone_column_names(7)[-1] == "dialscore Phone 7 Best Call Hours"


def test_no_column_of_dialscore_can_be_taken_for_one_of_a_crm_export() -> None:
    # Salesforce exports "Phone", "Mobile", "Lead Status"; a re-import matches names in any case.
    crm = ["Phone", "Mobile", "Lead Status", "Best Phone", "phoneStatus", "Status"]
    layout = Layout(crm, groups=3)
    added = layout.header[len(crm) :]
    assert all(name.startswith("dialscore ") for name in added)
    folded = [name.casefold() for name in layout.header]
    assert len(set(folded)) == len(folded)


def test_an_upload_keeps_its_columns_then_its_summary_then_each_phone() -> None:
    layout = Layout(["First Name", "Mobile", "Notes"], groups=6)
    assert layout.header == ["First Name", "Mobile", "Notes", *SUMMARY, *phone_column_names(6)]
    phones = [_phone(f"+1415555010{i}", "p2", "direct") for i in range(5)]
    phones.append(
        _phone("+14155550199", "p1", "Service Enriched Phone 1", reasons=["a", "b"]),
    )
    row = layout.row(
        _row(
            source_row=["Ann", "(415) 555-0100", "call after 5"],
            phones=phones,
            best_phone={"number": "+14155550199", "status": "p1"},
            lead_status="P1",
        )
    )
    cells = _cells(layout, row)
    assert cells["First Name"] == "Ann" and cells["Mobile"] == "(415) 555-0100"
    assert cells["dialscore Phone 1"] == "+14155550100"
    assert cells["dialscore Phone 5 Status"] == "p2"
    assert cells["dialscore Phone 6"] == "+14155550199"
    assert cells["dialscore Phone 6 Type"] == "Service Enriched Phone 1"
    assert cells["dialscore Phone 6 Reasons"] == "a; b"
    summary = [cells[name] for name in SUMMARY]
    assert summary == ["P1", "+14155550199", "p1", ""]


def test_short_source_rows_and_missing_phones_leave_empty_cells() -> None:
    layout = Layout(["a", "b", "c"], groups=2)
    row = layout.row(_row(source_row=["1"], phones=[_phone("+14155550100", None, "mobile")]))
    assert row == [
        "1", "", "",
        "Uncontacted", "", "", "",
        "+14155550100", "", "mobile", "US", "", "", "", "", "",
        "", "", "", "", "", "", "", "", "",
    ]  # fmt: skip


def test_each_phone_has_its_call_verdict_in_its_own_columns() -> None:
    # The verdict is merged into the entries when the file is made (P177).
    verdict = {
        "timeZone": "America/New_York",
        "callWindow": {"start": "08:00", "end": "21:00", "rule": "US", "source": "47 CFR"},
        "callableNow": False,
        "nextCallableAt": "2026-06-16T12:00:00Z",
        "bestCallHours": [
            {"days": ["mon", "tue"], "from": "17:00", "to": "19:00"},
            {"days": ["sat"], "from": "10:00", "to": "12:00"},
        ],
    }
    unknown = {"timeZone": None, "callableNow": None, "nextCallableAt": None, "bestCallHours": []}
    phones = [
        {**_phone("+12125550100", "p1", "mobile"), **verdict},
        {**_phone("+18005550100", "p2", "hq"), **unknown},
        {**_phone("+12125550101", "p2", "direct"), **verdict, "callableNow": True},
    ]
    layout = Layout(None, groups=3)
    cells = _cells(layout, layout.row(_row(phones=phones)))
    assert cells["dialscore Phone 1 Time Zone"] == "America/New_York"
    assert cells["dialscore Phone 1 Callable Now"] == "no"
    assert cells["dialscore Phone 1 Next Callable At"] == "2026-06-16T12:00:00Z"
    assert cells["dialscore Phone 1 Best Call Hours"] == "mon tue 17:00-19:00; sat 10:00-12:00"
    assert cells["dialscore Phone 2 Callable Now"] == ""
    assert cells["dialscore Phone 2 Time Zone"] == cells["dialscore Phone 2 Best Call Hours"] == ""
    assert cells["dialscore Phone 3 Callable Now"] == "yes"


def test_a_contact_enrichment_rejected_says_why() -> None:
    layout = Layout(["a"], groups=1)
    row = layout.row(
        _row(source_row=["x"], lead_status="No Numbers Found", rejected_reason="no new number")
    )
    assert _cells(layout, row)["dialscore Rejected Reason"] == "no new number"


def test_an_api_job_starts_with_the_contact_input_fields() -> None:
    layout = Layout(None, groups=1)
    assert layout.header[: len(API_FIELDS)] == list(API_FIELDS)
    assert API_FIELDS[:3] == ("firstName", "lastName", "email")
    # The submitted phone slots are the phone columns, from ``phones``: never twice.
    assert "phone" not in layout.header and "phone2Type" not in layout.header
    assert "phoneExt" in layout.header and "linkedInUrl" in layout.header
    row = layout.row(_row(fields={"firstName": "Bo", "companyAccount": "Acme", "phone": "x"}))
    cells = _cells(layout, row)
    assert (cells["firstName"], cells["companyAccount"], cells["title"]) == ("Bo", "Acme", "")


def test_the_crm_layout_writes_the_scored_numbers_into_the_files_phone_columns() -> None:
    header = ["Record ID", "Phone Number", "Mobile Phone Number", "Home", "Notes"]
    mapping = [
        "contactCrmId",
        phone_choice("direct"),
        phone_choice("mobile"),
        phone_choice("other"),
        EXTRA,
    ]
    layout = Layout(header, groups=3, mapping=mapping, crm=True)
    assert layout.header == [
        *header, *SUMMARY,
        "dialscore Phone Number Status", "dialscore Phone Number Reasons",
        "dialscore Mobile Phone Number Status", "dialscore Mobile Phone Number Reasons",
        "dialscore Home Status", "dialscore Home Reasons",
    ]  # fmt: skip
    bare = layout.row(_row(source_row=["x", "", "", "", ""]))
    assert bare[5:] == ["Uncontacted", "", "", "", *[""] * 6]
    # The direct line is empty in the file: the mobile is the contact's first phone entry, and
    # the number enrichment found (a mobile by its source) fills an empty column.
    contact = _row(
        source_row=["003A", "", "(415) 555-2671 x12", "", "vip"],
        phones=[
            _phone("+14155552671", "p1", "mobile", reasons=["number block: wireless"]),
            _phone("+14155550123", "p2", "Service Enriched Phone 1"),
            _phone("+14155550124", "p2", "Service Enriched Phone 2"),
        ],
        enriched_types=["other", "direct"],
        best_phone={"number": "+14155552671", "status": "p1"},
        lead_status="P1",
    )
    cells = _cells(layout, layout.row(contact))
    assert cells["Record ID"] == "003A" and cells["Notes"] == "vip"
    # E.164 cannot carry the extension the cell gave: such a cell is left as it was.
    assert cells["Mobile Phone Number"] == "(415) 555-2671 x12"
    assert cells["dialscore Mobile Phone Number Status"] == "p1"
    assert cells["dialscore Mobile Phone Number Reasons"] == "number block: wireless"
    # Each found number goes to an empty column of its source's type, else the first empty.
    assert cells["Home"] == "+14155550123" and cells["dialscore Home Status"] == "p2"
    assert cells["Phone Number"] == "+14155550124"
    assert cells["dialscore Lead Status"] == "P1"


def test_formulas_are_defused_but_numbers_are_not() -> None:
    for formula in (
        '=HYPERLINK("http://x")',
        "@SUM(A1)",
        "+cmd|' /C calc'!A0",
        "-2+3*cmd|x",
        "\t=1",
        "+1 x12 =cmd|x",
        "+1 HYPERLINK(x)",
    ):
        assert safe_cell(formula) == "'" + formula
    for number in (
        "+14155550100",
        "+1 (415) 555-0100",
        "-12.5",
        "+44 20 7946 0958",
        "0044",
        "+1 415-555-2671 ext. 254",
        "+1 415 555 2671 x12",
    ):
        assert safe_cell(number) == number
    assert safe_cell(None) == "" and safe_cell("Ann") == "Ann"


async def test_the_stream_sends_the_header_first_then_a_chunk_per_batch() -> None:
    layout = Layout(["Name"], groups=1)

    async def batches() -> AsyncIterator[list[ResultRow]]:
        yield [_row(ordinal=1, source_row=['Ann, "Jr"']), _row(ordinal=2, source_row=["Bé"])]
        yield [_row(ordinal=3, source_row=["=1+1"])]

    chunks = [chunk async for chunk in stream(layout, batches())]
    assert len(chunks) == 3
    assert chunks[0].startswith(b"\xef\xbb\xbf")
    text = b"".join(chunks).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == layout.header
    assert [r[0] for r in rows[1:]] == ['Ann, "Jr"', "Bé", "'=1+1"]


async def test_rejected_rows_come_at_their_place_in_the_file() -> None:
    layout = Layout(["Name"], groups=1)
    # The file's rows 0..6: 0, 3, 4 and 6 were rejected; the contacts are the others, in order.
    rejected: list[list[Rejected]] = [
        [(0, ["r0"], "why 0"), (3, ["r3"], "why 3")],
        [(4, ["r4", "extra"], "why 4"), (6, [], "why 6")],
    ]

    async def batches() -> AsyncIterator[list[ResultRow]]:
        yield [_row(ordinal=1, source_row=["c1"]), _row(ordinal=2, source_row=["c2"])]
        yield [_row(ordinal=3, source_row=["c5"])]

    async def left_out() -> AsyncIterator[list[Rejected]]:
        for batch in rejected:
            yield batch

    text = b"".join([c async for c in stream(layout, batches(), left_out())]).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))[1:]
    assert [r[0] for r in rows] == ["r0", "c1", "c2", "r3", "r4", "c5", ""]
    reasons = [r[layout.header.index("dialscore Rejected Reason")] for r in rows]
    assert reasons == ["why 0", "", "", "why 3", "why 4", "", "why 6"]
    assert all(len(r) == len(layout.header) for r in rows)
