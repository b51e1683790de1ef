"""Contact exports of CRMs and contact databases: the export data file, the guess of each
export's columns, phone types and extensions, report footers, and phone columns left
unscored. The files in tests/data/crm are each export's documented columns in their order."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from dialscore.dashboard import crm_exports, csvin
from dialscore.dashboard.crm_exports import PHONE, ExportDataError, load_spellings, parse_spellings
from dialscore.dashboard.csvin import Table
from dialscore.dashboard.mapping import EXTRA, IGNORE, phone_choice
from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS
from dialscore.phones import PHONE_TYPES

CRM = Path(__file__).parent / "data" / "crm"
EXPORTS = {
    "generic",
    "salesforce",
    "hubspot",
    "pipedrive",
    "zoho",
    "outreach",
    "salesloft",
    "apollo",
    "zoominfo",
}


def read(name: str) -> Table:
    return csvin.read_table((CRM / name).read_bytes(), max_rows=100)


def text_table(text: str, max_rows: int = 100) -> Table:
    return csvin.read_table(text.encode(), max_rows=max_rows)


def dialled(contact: dict[str, Any]) -> dict[str, str]:
    """A contact's phone slots, types and extensions, those kept in unmappedFields too."""
    found = {k: v for k, v in contact.items() if k.startswith("phone")}
    kept = contact.get("unmappedFields", {})
    return found | {k: v for k, v in kept.items() if k.startswith("phone") and "Ext" in k}


# -- the data file ------------------------------------------------------------------------------


def test_the_data_file_loads_and_names_only_real_fields_and_types() -> None:
    known = load_spellings()
    assert {e.key for e in known.exports} == EXPORTS
    meanings = [m for e in known.exports for m in e.columns.values()]
    assert len(meanings) > 200
    for export in known.exports:
        assert len(export.source) > 40, export.key
    for meaning in meanings:
        assert meaning.field in {*CONTACT_INPUT_FIELDS, PHONE, crm_exports.EXTRA}
        assert meaning.phone_type is None or meaning.phone_type in PHONE_TYPES
        assert meaning.phone_type is None or meaning.is_phone
    assert {m.phone_type for m in meanings if m.is_phone} == {None, *PHONE_TYPES}
    assert {kind for _, kind in known.phone_words} == set(PHONE_TYPES)
    assert known.footer_lines


_EXPORT = '[exports.x]\nname = "X"\nsource = "the X manual"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_EXPORT + '[exports.x.columns]\n"Cell" = "mobileNumber"\n', "no contact input field"),
        (_EXPORT + '[exports.x.columns]\n"Cell" = "phone:cellular"\n', "phone type"),
        (_EXPORT + '[exports.x.columns]\n"Cell" = "phone2"\n', "names the slot phone2"),
        (_EXPORT + '[exports.x.columns]\n"Cell" = "title:direct"\n', "no contact input field"),
        (_EXPORT + '[exports.x.columns]\n"Cell" = 2\n', "must be a string"),
        (
            _EXPORT + '[exports.x.columns]\n"Mobile Phone" = "phone"\n"mobile_phone" = "phone"\n',
            "are one spelling",
        ),
        (_EXPORT + '[exports.x.fallback_columns]\n"Cell" = "phone"\n', "never fallbacks"),
        (_EXPORT + '[exports.x.fallback_columns]\n"Fax" = "extra"\n', "no fallback"),
        ('[exports.x]\nname = "X"\n', "needs a source"),
        (_EXPORT + 'colour = "red"\n', "unknown keys: colour"),
        (
            _EXPORT + '[exports.x.columns]\n"Ref" = "leadId"\n'
            '[exports.y]\nname = "Y"\nsource = "the Y manual"\n'
            '[exports.y.columns]\n"Ref" = "customerContactId"\n',
            "means different things",
        ),
        ('[footer]\nlines = ["total ("]\n', "is no pattern"),
        ('[[phone_words]]\ntype = "cell"\nwords = ["cell"]\n', "phone_words"),
        ("[exports\n", "not valid TOML"),
    ],
)
def test_a_fault_in_the_data_file_is_named(text: str, message: str) -> None:
    with pytest.raises(ExportDataError, match=message):
        parse_spellings(text)


def test_exports_that_agree_win_over_the_generic_meaning_which_settles_a_dispute() -> None:
    known = parse_spellings(
        '[exports.generic]\nname = "Any"\nsource = "spreadsheets"\n'
        '[exports.generic.columns]\n"Ref" = "leadId"\n"Line" = "phone"\n'
        + _EXPORT
        + '[exports.x.columns]\n"Ref" = "customerContactId"\n"Line" = "phone:hq"\n'
        '[exports.y]\nname = "Y"\nsource = "the Y manual"\n'
        '[exports.y.columns]\n"Ref" = "contactCrmId"\n"Line" = "phone:hq"\n'
    )

    def field(header: str) -> str | None:
        meaning = known.meaning(header)
        return None if meaning is None else meaning.field

    assert field("ref") == "leadId"
    assert (field("LINE"), known.phone_type("LINE")) == (PHONE, "hq")
    # A contact field's own name holds it; a slot's name is a phone column of no type.
    assert field("company_city") == "companyCity"
    assert (field("Phone3"), known.phone_type("Phone3")) == (PHONE, None)
    assert field("Notes") is None


# -- each export, read and guessed as a person would map it ---------------------------------

EXPECTED = tomllib.loads((CRM / "expected.toml").read_text(encoding="utf-8"))


def test_every_crm_has_an_export_file() -> None:
    assert {case["export"] for case in EXPECTED.values()} == EXPORTS - {"generic"}
    assert sorted(EXPECTED) == sorted(p.name for p in CRM.glob("*.csv"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_an_export_is_read_and_mapped_as_a_person_would(name: str) -> None:
    expected = EXPECTED[name]
    table = read(name)
    assert table.bom == expected["bom"]
    assert (len(table.rows), table.footer) == (expected["rows"], expected["footer"])
    mapping = csvin.guess_mapping(table.header)
    # The whole header, in its documented order, and the choice for each column.
    assert list(zip(table.header, mapping, strict=True)) == list(expected["mapping"].items())
    unscored = csvin.unscored_phone_columns(table, mapping)
    assert unscored == [tuple(column) for column in expected["unscored"]]
    built = csvin.build_contacts(table, mapping)
    assert built.rejected == {} and built.findings == []
    assert len(built.contacts) == len(table.rows)
    people = {f"{c['firstName']} {c['lastName']}": c for c in built.contacts}
    for person, phones in expected["phones"].items():
        assert dialled(people[person]) == phones, person
    for person, fields in expected.get("fields", {}).items():
        assert {k: people[person].get(k) for k in fields} == fields, person
    for person, kept in expected.get("unmapped", {}).items():
        extra = people[person]["unmappedFields"]
        assert {k: extra.get(k) for k in kept} == kept, person


def test_a_salesforce_reports_footer_is_its_last_lines_after_a_blank_one() -> None:
    table = read("salesforce.csv")
    assert table.blank_rows == 1 and len(table.footer) == 5
    assert table.footer[2].startswith("Copyright (c)")
    assert table.rows[-1][2:4] == ["Jin", "Park"]


# -- phone types ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Mobile Phone Number", "mobile"),
        ("Company HQ Phone", "hq"),
        ("Corporate Phone", "hq"),
        ("Person - Phone - Work", "direct"),
        ("Asst. Phone", "other"),
        # Known, and telling no type.
        ("Phone", None),
        ("Phone Number", None),
        ("Fax", None),
        # Unknown: a word of the name tells it, the first type's words first.
        ("Cell (work)", "mobile"),
        ("Phone (HQ)", "hq"),
        ("Desk line - office", "direct"),
        ("Weekend phone", None),
    ],
)
def test_a_phone_columns_type_comes_from_the_data_then_from_its_words(
    name: str, kind: str | None
) -> None:
    assert csvin.column_type(name) == kind


def test_more_than_five_phone_columns_keep_the_most_dialable_in_column_order() -> None:
    # Mobile, direct, untyped, other, then hq lines; of two hq lines the earlier column.
    header = ["Main Phone", "Home Phone", "Company Phone", "Mobile", "Phone", "Direct Dial", "Fax"]
    assert csvin.guess_mapping(header) == [
        phone_choice("hq"),
        phone_choice("other"),
        EXTRA,
        phone_choice("mobile"),
        phone_choice("unknown"),
        phone_choice("direct"),
        EXTRA,
    ]
    header[-1] = "Other Phone"
    assert csvin.guess_mapping(header) == [
        EXTRA,
        phone_choice("other"),
        EXTRA,
        phone_choice("mobile"),
        phone_choice("unknown"),
        phone_choice("direct"),
        phone_choice("other"),
    ]


def test_the_type_chosen_for_a_column_is_the_type_of_its_numbers() -> None:
    table = text_table(
        "First Name,Last Name,Mobile Phone Number,Phone Type\n"
        "Ada,L,4155552671,direct\nBo,M,4155552672,\n"
    )
    mapping = csvin.guess_mapping(table.header)
    assert mapping == ["firstName", "lastName", phone_choice("mobile"), EXTRA]
    built = csvin.build_contacts(table, mapping)
    assert [c["phoneType"] for c in built.contacts] == ["mobile", "mobile"]
    # A person who knows better chooses another type: the numbers carry it.
    mapping[2] = phone_choice("hq")
    built = csvin.build_contacts(table, mapping)
    assert [c["phoneType"] for c in built.contacts] == ["hq", "hq"]
    mapping[2] = phone_choice("unknown")
    assert all("phoneType" not in c for c in csvin.build_contacts(table, mapping).contacts)


# -- extensions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "country", "split"),
    [
        ("+1 415 555 2671 x254", None, ("+1 415 555 2671", "254")),
        ("(312) 555-2671 ext. 15", None, ("(312) 555-2671", "15")),
        ("(312) 555-2671 ext 15", None, ("(312) 555-2671", "15")),
        ("(312) 555-2671 Ext.15", None, ("(312) 555-2671", "15")),
        ("(312) 555-2671 extension 15", None, ("(312) 555-2671", "15")),
        ("(312) 555-2671 #15", None, ("(312) 555-2671", "15")),
        ("+1-312-555-2671;ext=15", None, ("+1-312-555-2671", "15")),
        ("tel:+1-312-555-2671;ext=15", None, ("tel:+1-312-555-2671", "15")),
        ("020 7946 0958 x12", "GB", ("020 7946 0958", "12")),
        # No extension, or no valid number to take it from: the cell stays whole.
        ("+1 415 555 2671", None, None),
        ("4155552671", None, None),
        ("555-2671 x12", None, None),
        ("ask for extension 12", None, None),
    ],
)
def test_an_extension_is_split_off_its_number(
    cell: str, country: str | None, split: tuple[str, str] | None
) -> None:
    assert csvin.split_extension(cell, country) == split


def test_every_slot_keeps_its_extension() -> None:
    table = text_table(
        "First Name,Last Name,Phone,Ext,Mobile,Other Phone\n"
        "Ada,L,+1 415 555 2671 x254,,4155552672,(312) 555-2673 ext. 7\n"
        "Bo,M,+1 415 555 2674 x12,31,,\n"
        "Cy,N,+1 415 555 2675 x31,31,,\n"
        "Di,O,4155552676,9,,\n"
    )
    mapping = csvin.guess_mapping(table.header)
    assert mapping == [
        "firstName",
        "lastName",
        phone_choice("unknown"),
        "phoneExt",
        phone_choice("mobile"),
        phone_choice("other"),
    ]
    ada, bo, cy, di = csvin.build_contacts(table, mapping).contacts
    assert dialled(ada) == {
        "phone": "+1 415 555 2671",
        "phoneExt": "254",
        "phone2": "4155552672",
        "phone2Type": "mobile",
        "phone3": "(312) 555-2673",
        "phone3Type": "other",
        "phone3Ext": "7",
    }
    assert dialled(bo) == {"phone": "+1 415 555 2674", "phoneExt": "31", "phoneExtFromNumber": "12"}
    assert dialled(cy) == {"phone": "+1 415 555 2675", "phoneExt": "31"}
    assert dialled(di) == {"phone": "4155552676", "phoneExt": "9"}


# -- report footers -------------------------------------------------------------------------

CONTACTS = "First Name,Last Name,Phone,Email\nAda,Lee,4155552671,ada@x.example\n"


@pytest.mark.parametrize(
    ("tail", "footer"),
    [
        ("\nGrand Totals (50 records)\n", ["Grand Totals (50 records)"]),
        ('"Grand Totals (1,250 records)"\n', ["Grand Totals (1,250 records)"]),
        ('"Total",,,\n', ["Total"]),
        ("Record Count: 1\n", ["Record Count: 1"]),
        (
            '\n"Grand Totals (1 records)"\n\n"Confidential Information - Do Not Distribute"\n'
            '"Copyright \u00a9 2000-2025 salesforce.com, inc. All rights reserved."\n',
            [
                "Grand Totals (1 records)",
                "Confidential Information - Do Not Distribute",
                "Copyright \u00a9 2000-2025 salesforce.com, inc. All rights reserved.",
            ],
        ),
    ],
)
def test_a_reports_footer_is_left_out_and_kept(tail: str, footer: list[str]) -> None:
    table = text_table(CONTACTS + tail)
    assert table.footer == footer
    assert [row[0] for row in table.rows] == ["Ada"]


@pytest.mark.parametrize(
    ("tail", "footer"),
    [
        # A last contact of one filled cell: a phone number, an email address.
        (",,4155552672,\n", []),
        (",,,bo@x.example\n", []),
        (
            "\n,,+44 20 7946 0958,\n\n"
            '"Copyright (c) 2024 salesforce.com, inc. All rights reserved."\n',
            ["Copyright (c) 2024 salesforce.com, inc. All rights reserved."],
        ),
        # Values in several columns, a lone name after a blank line: never footer.
        ("Total,1,,\n", []),
        ("\nLee\n", []),
        ("\nLee\nTotal\n", ["Total"]),
    ],
)
def test_a_row_that_may_be_a_contact_is_never_footer(tail: str, footer: list[str]) -> None:
    table = text_table(CONTACTS + tail)
    assert table.footer == footer
    assert len(table.rows) == 2


def test_only_trailing_lines_are_footer() -> None:
    table = text_table(CONTACTS + "Total\nBo,Ng,4155552672,\n")
    assert table.footer == [] and [row[0] for row in table.rows] == ["Ada", "Total", "Bo"]


def test_footer_lines_do_not_count_against_the_row_limit() -> None:
    rows = "".join(f"F{i},L{i},41555526{i:02d},\n" for i in range(3))
    footer = '\n"Example Corp"\n"Confidential Information - Do Not Distribute"\n"Total"\n'
    table = text_table("First Name,Last Name,Phone,Email\n" + rows + footer, max_rows=3)
    assert len(table.rows) == 3 and len(table.footer) == 3
    with pytest.raises(csvin.UploadError, match="more than 2 rows"):
        text_table("First Name,Last Name,Phone,Email\n" + rows + footer, max_rows=2)


# -- phone columns left unscored ------------------------------------------------------------


def test_phone_columns_the_mapping_leaves_out_are_pointed_out_with_their_count() -> None:
    lines = ["First Name,Last Name,Mobile Phone Number,Cell (work),Fax,Notes,Contact ID,Phone"]
    for i in range(10):
        mobile = f"+1 415 555 26{i:02d}" if i % 3 else ""
        cell = f"(312) 555-27{i:02d}" if i < 8 else "n/a"
        lines.append(
            f"F{i},L{i},{mobile},{cell},4155552999,call after {i},41555528{i:02d},4155552{i:03d}"
        )
    table = text_table("\n".join(lines) + "\n")
    mapping = ["firstName", "lastName", EXTRA, IGNORE, EXTRA, EXTRA, EXTRA, phone_choice("unknown")]
    assert csvin.unscored_phone_columns(table, mapping) == [
        ("Mobile Phone Number", 6),
        ("Cell (work)", 8),
    ]
    mapping[2:4] = [phone_choice("mobile"), phone_choice("mobile")]
    assert csvin.unscored_phone_columns(table, mapping) == []


def test_an_unknown_column_of_mostly_other_things_is_not_a_phone_column() -> None:
    lines = ["First Name,Last Name,Phone,Reference"]
    for i in range(10):
        reference = f"4155553{i:03d}" if i < 4 else f"REF-{i}"
        lines.append(f"F{i},L{i},4155552{i:03d},{reference}")
    table = text_table("\n".join(lines) + "\n")
    assert csvin.unscored_phone_columns(table, csvin.guess_mapping(table.header)) == []


def test_a_column_of_national_numbers_is_read_in_the_rows_phone_country() -> None:
    lines = ["First Name,Last Name,Phone Country,Landline"]
    lines += [f"F{i},L{i},GB,020 7946 09{i:02d}" for i in range(5)]
    table = text_table("\n".join(lines) + "\n")
    mapping = ["firstName", "lastName", "phoneCountry", EXTRA]
    assert csvin.unscored_phone_columns(table, mapping) == [("Landline", 5)]
    assert csvin.unscored_phone_columns(table, [*mapping[:2], EXTRA, EXTRA]) == []
