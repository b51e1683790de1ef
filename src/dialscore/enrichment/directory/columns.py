"""The directory's columns: the names a file gives them (CSV header names and JSON Lines keys,
with their aliases), where a CSV file has them, and the table's columns and widths."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from dialscore.kit.linefiles import FileFormatError, column_key

# A report names at most this many columns it ignored.
MAX_IGNORED = 50
FIELDS = ("firstName", "lastName", "email", "linkedInUrl", "company", "website",
          "companyLinkedInUrl", "title")  # fmt: skip
# The widths of directory_people's columns, by field.
WIDTHS = (200, 200, 320, 500, 300, 300, 500, 300)
NARROWEST = min(WIDTHS)
# Where each field is in a row's values (FIELDS order).
FIRST, LAST, EMAIL, LINKEDIN, COMPANY, WEBSITE, COMPANY_PAGE, TITLE = range(8)
TABLE = "directory_people"
# The table's columns in the order rows carry them (updated_at is added when writing).
COLUMNS = (
    "id", "first_name", "last_name", "email", "linkedin_url", "company", "website",
    "company_linkedin_url", "title", "phones", "email_key", "linkedin_key", "last_name_key",
    "company_key", "first_initial", "company_name_key", "company_domain", "company_page",
)  # fmt: skip
# Every column but the id: what an upsert compares and sets.
VALUE_COLUMNS = COLUMNS[1:]

# The names of each field, as ``column_key`` makes them.
FIELD_NAMES = {
    "id": ("id", "recordid", "personid"),
    "firstName": ("firstname", "first", "givenname"),
    "lastName": ("lastname", "last", "surname", "familyname"),
    "email": ("email", "emailaddress", "workemail"),
    "linkedInUrl": ("linkedinurl", "linkedin", "linkedinprofile", "linkedinprofileurl"),
    "company": ("company", "companyname", "companyaccount", "organization", "organisation"),
    "website": ("website", "companywebsite", "domain", "companydomain"),
    "companyLinkedInUrl": ("companylinkedinurl", "companylinkedin"),
    "title": ("title", "jobtitle"),
}
KNOWN_KEYS = frozenset(alias for aliases in FIELD_NAMES.values() for alias in aliases)
# Phone columns typed by their name.
TYPED_PHONES = {"mobilephone": "mobile", "directphone": "direct", "hqphone": "hq"}
PHONE_SLOT = re.compile(r"phone(\d*)")
PHONE_KEY = re.compile(r"phones|phone\d*(?:type)?|mobilephone|directphone|hqphone")


def field_key(by_key: dict[str, str], name: str) -> str | None:
    """Of a JSON Lines record's keys (by their ``column_key``), the one that gives field
    ``name`` (or ``id``), if any."""
    return next((by_key[alias] for alias in FIELD_NAMES[name] if alias in by_key), None)


@dataclass(frozen=True)
class CsvLayout:
    """Where a CSV file's fields and phones are. Rows are padded to ``width`` + 1 cells, so
    that ``width`` is the position of an empty cell (for columns the file lacks)."""

    width: int
    id_at: int
    positions: tuple[int, ...]  # in FIELDS order
    phones: tuple[tuple[int, str | None, int], ...]  # (position, fixed type, type position)
    phones_cell: int


def csv_layout(header: Sequence[str]) -> tuple[CsvLayout, tuple[str, ...]]:
    """The layout of a CSV file with this header, and the columns it ignores."""
    keys = [column_key(name) for name in header]
    width = len(keys)
    position: dict[str, int] = {}
    for index, key in enumerate(keys):
        position.setdefault(key, index)
    used: set[int] = set()

    def find(name: str) -> int:
        for alias in FIELD_NAMES[name]:
            if alias in position:
                used.add(position[alias])
                return position[alias]
        return width

    id_at = find("id")
    positions = tuple(find(name) for name in FIELDS)
    phones: list[tuple[int, str | None, int]] = []
    for index, key in enumerate(keys):
        if key in TYPED_PHONES:
            phones.append((index, TYPED_PHONES[key], width))
            used.add(index)
            continue
        slot = PHONE_SLOT.fullmatch(key)
        if slot is not None and index == position[key]:
            type_at = position.get(f"phone{slot.group(1)}type", width)
            if slot.group(1) == "1" and type_at == width:
                type_at = position.get("phonetype", width)
            phones.append((index, None, type_at))
            used.update((index, type_at))
    phones_cell = position.get("phones", width)
    used.add(phones_cell)
    present = {name for name, at in zip(FIELDS, positions, strict=True) if at < width}
    identifying = id_at < width or bool({"email", "linkedInUrl"} & present)
    named = {"firstName", "lastName"} <= present and bool(
        {"company", "website", "companyLinkedInUrl"} & present
    )
    if not identifying and not named:
        raise FileFormatError(
            "a directory file needs a header naming its columns, with at least id, email, "
            "linkedInUrl, or firstName, lastName and company (or website or "
            "companyLinkedInUrl)"
        )
    ignored = tuple(
        name.strip() for index, name in enumerate(header) if index not in used and name.strip()
    )
    layout = CsvLayout(width, id_at, positions, tuple(phones), phones_cell)
    return layout, ignored[:MAX_IGNORED]
