"""Reading an uploaded contact list: decoding, delimiter, header, the guess of which contact
field each column holds, the contacts a mapping makes of its rows, and the damage
spreadsheets do to numbers. Pure."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS
from dialscore.phones import analyse, country_or_default
from dialscore.scoring.numbers import PHONE_SLOTS

EXTRA = "extra"
IGNORE = "ignore"
DELIMITERS = ",;\t"
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
SNIFF_BYTES = 64 * 1024


class UploadError(ValueError):
    """Why a file cannot be read as a contact list, in words for the person who sent it."""


@dataclass(frozen=True)
class Table:
    """The file's header and its data rows (blank rows left out), each padded to the
    header's width; ``widths`` keeps each row's own count of cells."""

    header: list[str]
    rows: list[list[str]]
    widths: list[int]
    delimiter: str
    blank_rows: int = 0
    bom: bool = False

    @property
    def delimiter_name(self) -> str:
        return DELIMITER_NAMES[self.delimiter]


def decode(data: bytes) -> str:
    """The file's text: UTF-8, with or without a byte order mark."""
    if not data.strip():
        raise UploadError("The file is empty.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UploadError(
            "The file is not UTF-8 text (an unreadable byte at position "
            f"{exc.start}). Save it again as \u201cCSV UTF-8\u201d and upload that file."
        ) from None
    if "\x00" in text:
        raise UploadError("The file holds binary data, not CSV text.")
    return text


def _counted_delimiter(line: str) -> str:
    counts = {d: line.count(d) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def detect_delimiter(text: str) -> str:
    """Comma, semicolon or tab: what ``csv.Sniffer`` finds among those three in the start of
    the file, else the one the header line holds most of (comma when none)."""
    sample = text[:SNIFF_BYTES]
    if len(text) > SNIFF_BYTES and "\n" in sample:
        sample = sample[: sample.rindex("\n")]
    try:
        found = csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        found = ""
    first_line = sample.split("\n", 1)[0]
    counted = _counted_delimiter(first_line)
    # The header names the columns: a delimiter it does not hold is a wrong guess.
    if found and found in DELIMITERS and (found in first_line or counted not in first_line):
        return found
    return counted


def _check_header(header: list[str]) -> list[str]:
    names = [cell.strip() for cell in header]
    if not any(names):
        raise UploadError("The first row is empty: the file needs a header row naming each column.")
    blank = [i + 1 for i, name in enumerate(names) if not name]
    if blank:
        columns = ", ".join(str(i) for i in blank)
        raise UploadError(
            f"Column {columns} of the header row has no name: give every column a name."
        )
    seen: dict[str, int] = {}
    for name in names:
        seen[name.casefold()] = seen.get(name.casefold(), 0) + 1
    twice = [name for name in dict.fromkeys(names) if seen[name.casefold()] > 1]
    if twice:
        listed = ", ".join(f"\u201c{n}\u201d" for n in twice)
        raise UploadError(f"The header names more than one column {listed}: rename them.")
    if len(names) >= 2 and all(_looks_like_data(n) for n in names):
        raise UploadError(
            "The first row looks like data, not a header: add a row naming each column."
        )
    return names


def _looks_like_data(name: str) -> bool:
    return bool(re.fullmatch(r"[\d\s().+\-/E]+", name)) or "@" in name


def read_table(data: bytes, *, max_rows: int) -> Table:
    """The rows of an uploaded CSV file, or an ``UploadError`` saying why it cannot be used."""
    text = decode(data)
    delimiter = detect_delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader, None)
        if header is None:
            raise UploadError("The file is empty.")
        names = _check_header(header)
        rows: list[list[str]] = []
        widths: list[int] = []
        blank = 0
        width = len(names)
        for row in reader:
            if not any(cell.strip() for cell in row):
                blank += 1
                continue
            if len(rows) == max_rows:
                raise UploadError(
                    f"The file has more than {max_rows:,} rows: split it into files of at "
                    f"most {max_rows:,} rows."
                )
            widths.append(len(row))
            rows.append(row + [""] * (width - len(row)) if len(row) < width else row)
    except csv.Error as exc:
        raise UploadError(f"The file is not valid CSV (line {reader.line_num}): {exc}.") from None
    if not rows:
        raise UploadError("The file has a header but no rows of contacts.")
    return Table(names, rows, widths, delimiter, blank, data.startswith(b"\xef\xbb\xbf"))


# -- which field a column holds ---------------------------------------------------------------


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.casefold())


_SPELLINGS: dict[str, tuple[str, ...]] = {
    "firstName": ("first", "firstname", "fname", "givenname", "forename", "contactfirstname"),
    "lastName": ("last", "lastname", "lname", "surname", "familyname", "contactlastname"),
    "email": ("email", "emailaddress", "mail", "workemail", "businessemail", "contactemail"),
    "phone": (
        "phone",
        "phonenumber",
        "telephone",
        "tel",
        "workphone",
        "businessphone",
        "officephone",
        "mainphone",
        "phone1",
        "primaryphone",
    ),
    "phone2": ("mobile", "mobilephone", "cell", "cellphone", "cellular", "mobilenumber", "phone2"),
    "phone3": ("directdial", "directphone", "directline", "direct", "phone3"),
    "phone4": ("homephone", "otherphone", "phone4"),
    "phone5": ("phone5", "alternatephone", "altphone"),
    "phoneExt": ("ext", "extension", "phoneext", "phoneextension"),
    "title": ("title", "jobtitle", "position", "role"),
    "companyAccount": (
        "company",
        "companyname",
        "account",
        "accountname",
        "organization",
        "organisation",
        "employer",
        "companyaccount",
    ),
    "linkedInUrl": (
        "linkedin",
        "linkedinurl",
        "linkedinprofile",
        "personlinkedinurl",
        "linkedinprofileurl",
    ),
    "companyLinkedInUrl": ("companylinkedin", "companylinkedinurl"),
    "website": ("website", "companywebsite", "web", "url", "domain", "companydomain"),
    "contactCrmId": ("crmid", "contactid", "contactcrmid", "recordid", "leadid18"),
    "accountCrmId": ("accountid", "accountcrmid", "companyid"),
    "zipPostalCode": ("zip", "zipcode", "postcode", "postalcode", "zippostalcode"),
    "stateProvince": ("state", "province", "stateprovince", "region"),
    "country": ("country", "countryname"),
    "city": ("city", "town"),
    "street": ("street", "address", "streetaddress"),
    "industry": ("industry",),
}
_GUESSES: dict[str, str] = {_key(f): f for f in CONTACT_INPUT_FIELDS}
for _field, _spellings in _SPELLINGS.items():
    for _spelling in _spellings:
        _GUESSES[_spelling] = _field
_TYPE_WORDS = (("mobile", "mobile"), ("cell", "mobile"), ("direct", "direct"))


def column_type(name: str) -> str | None:
    """The phone type a column's name tells (“Mobile”, “Cell”, “Direct Dial”)."""
    key = _key(name)
    return next((kind for word, kind in _TYPE_WORDS if word in key), None)


def guess_field(name: str) -> str | None:
    """The contact input field a column named ``name`` most likely holds, if any."""
    return _GUESSES.get(_key(name))


def guess_mapping(header: Sequence[str]) -> list[str]:
    """For each column, in order, its guessed field; a field already taken by an earlier
    column, or none guessed, keeps the column as an extra field."""
    taken: set[str] = set()
    mapping: list[str] = []
    for name in header:
        guess = guess_field(name)
        if guess is None or guess in taken:
            mapping.append(EXTRA)
        else:
            taken.add(guess)
            mapping.append(guess)
    return mapping


def mapping_errors(header: Sequence[str], mapping: Sequence[str]) -> dict[int, str]:
    """Per column index, why its choice cannot stand: a field chosen for two columns, an
    unknown choice; and, at index -1, a mapping that uses no contact field at all."""
    errors: dict[int, str] = {}
    first: dict[str, int] = {}
    for i, choice in enumerate(mapping):
        if choice in (EXTRA, IGNORE):
            continue
        if choice not in CONTACT_INPUT_FIELDS:
            errors[i] = (
                "Choose a contact field, \u201cKeep as extra field\u201d or \u201cIgnore\u201d."
            )
        elif choice in first:
            errors[i] = (
                f"{choice} is already chosen for column \u201c{header[first[choice]]}\u201d."
            )
        else:
            first[choice] = i
    if not first:
        errors[-1] = "Choose a contact field for at least one column."
    return errors


# -- damage spreadsheets do -------------------------------------------------------------------

_SCIENTIFIC = re.compile(r"[+-]?\d+(?:[.,]\d+)?[eE][+-]?\d+")
_DIGITS = re.compile(r"\d+")
ZIP_FIELDS = ("zipPostalCode", "companyZip")


@dataclass(frozen=True)
class Finding:
    """Damage found in one cell: its data row (0-based), column, what it holds, whether the
    row is rejected for it, and what it means."""

    row: int
    column: str
    value: str
    reject: bool
    message: str


def phone_damage(value: str, country: str | None) -> tuple[str | None, str | None, bool]:
    """What a spreadsheet did to a phone cell: (the number to read instead, the
    explanation, whether the contact must be rejected); (None, None, False) when nothing."""
    text = value.strip()
    if _SCIENTIFIC.fullmatch(text):
        return (
            None,
            (
                f"{text} is a number in scientific notation: the spreadsheet rounded it and its "
                "last digits are lost. Format the column as Text in the spreadsheet, type the "
                "numbers again and export."
            ),
            True,
        )
    if not _DIGITS.fullmatch(text):
        return None, None, False
    region = country_or_default(country)
    if analyse(text, region) is not None:
        return None, None, False
    if 11 <= len(text) <= 15 and not text.startswith("1"):
        lost_plus = (
            f"{text} looks like an international number that lost its leading + (a "
            f"spreadsheet reads +{text[:2]}\u2026 as a formula)"
        )
        if analyse("+" + text) is not None:
            return "+" + text, f"{lost_plus}; read as +{text}.", False
        return (
            None,
            f"{lost_plus}, but +{text} is not a valid number either: put the + back "
            "and format the column as Text.",
            False,
        )
    if 8 <= len(text) <= 10:
        return (
            None,
            (
                f"{text} is not a valid {region} number. If it is a national number that lost "
                "its leading 0 (for example a UK mobile 07700 900123 saved as 7700900123), "
                "give the number's country in a column mapped to the phone's Country field, "
                "or format the column as Text and export again."
            ),
            False,
        )
    return None, None, False


@dataclass
class Contacts:
    """What a mapping makes of a table: one contact per kept row, each with its row index;
    the rows rejected for damage with their reasons; every finding."""

    contacts: list[dict[str, Any]] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    rejected: dict[int, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)


def build_contacts(table: Table, mapping: Sequence[str]) -> Contacts:
    """The contacts the rows make with ``mapping`` (a field, ``EXTRA`` or ``IGNORE`` per
    column); damaged phones are read as explained in their findings."""
    out = Contacts()
    width = len(table.header)
    columns = [
        (i, name, choice)
        for i, (name, choice) in enumerate(zip(table.header, mapping, strict=True))
        if choice != IGNORE
    ]
    slots = {choice: i for i, _, choice in columns if choice in PHONE_SLOTS}
    for index, row in enumerate(table.rows):
        if table.widths[index] > width and any(c.strip() for c in row[width:]):
            out.rejected[index] = (
                f"the row has {table.widths[index]} cells but the header names {width} columns"
            )
            continue
        contact: dict[str, Any] = {}
        extra: dict[str, str] = {}
        for i, name, choice in columns:
            cell = row[i]
            if not cell.strip():
                continue
            if choice == EXTRA:
                extra[name] = cell
            else:
                contact[choice] = cell
        notes: list[str] = []
        for slot, i in slots.items():
            cell = row[i]
            if not cell.strip():
                continue
            told = column_type(table.header[i])
            if told is not None and not contact.get(f"{slot}Type"):
                contact[f"{slot}Type"] = told
            country = contact.get(f"{slot}Country")
            fixed, message, reject = phone_damage(cell, country)
            if message is None:
                continue
            out.findings.append(Finding(index, table.header[i], cell, reject, message))
            if reject:
                out.rejected[index] = f"{table.header[i]}: {message}"
                break
            notes.append(f"{table.header[i]}: {message}")
            if fixed is not None:
                contact[slot] = fixed
        if index in out.rejected:
            continue
        for i, name, choice in columns:
            cell = row[i].strip()
            if choice in ZIP_FIELDS and _DIGITS.fullmatch(cell) and 3 <= len(cell) <= 4:
                message = (
                    f"{cell} may be a ZIP code that lost its leading zeros "
                    f"({cell.zfill(5)}); kept as it is."
                )
                out.findings.append(Finding(index, name, cell, False, message))
            elif choice != EXTRA and choice not in PHONE_SLOTS and _SCIENTIFIC.fullmatch(cell):
                message = f"{cell} is in scientific notation: its last digits may be lost."
                out.findings.append(Finding(index, name, cell, False, message))
        if extra:
            contact["unmappedFields"] = extra
        if notes:
            out.notes[index] = " ".join(notes)
        out.contacts.append(contact)
        out.positions.append(index)
    return out


def rejected_csv(table: Table, reasons: dict[int, str]) -> str:
    """The rejected rows as they were in the file, plus a ``rejectedReason`` column, in the
    file's order, with its delimiter and (when it had one) its byte order mark, so that the
    spreadsheet it came from opens it alike and the fixed rows can be uploaded again."""
    width = max([len(table.header), *(table.widths[i] for i in reasons)])
    buffer = io.StringIO("\ufeff" if table.bom else "")
    buffer.seek(0, io.SEEK_END)
    writer = csv.writer(buffer, delimiter=table.delimiter, lineterminator="\r\n")
    writer.writerow([*table.header, *[""] * (width - len(table.header)), "rejectedReason"])
    for index in sorted(reasons):
        row = table.rows[index]
        writer.writerow([*row, *[""] * (width - len(row)), reasons[index]])
    return buffer.getvalue()
