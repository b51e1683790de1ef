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

from dialscore.dashboard import crm_exports
from dialscore.dashboard.crm_exports import PHONE, footer_length, spellings
from dialscore.dashboard.mapping import (
    EXTRA,
    IGNORE,
    PHONE_COUNTRY,
    PHONE_PREFIX,
    UNKNOWN,
    offered,
    phone_choice,
    phone_columns,
)
from dialscore.dashboard.words import words
from dialscore.phones import analyse, country_or_default
from dialscore.scoring.numbers import PHONE_SLOTS

DELIMITERS = ",;\t"
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
SNIFF_BYTES = 64 * 1024
# Rows read past the limit before refusing a file, so that a report's footer lines do not
# count against it.
FOOTER_ALLOWANCE = 20


class UploadError(ValueError):
    """Why a file cannot be read as a contact list, in words for the person who sent it."""


@dataclass(frozen=True)
class Table:
    """The file's header and its data rows (blank rows left out), each padded to the
    header's width; ``widths`` keeps each row's own count of cells; ``footer`` the text of
    the lines at the end that are a report's footer, left out of ``rows``."""

    header: list[str]
    rows: list[list[str]]
    widths: list[int]
    delimiter: str
    blank_rows: int = 0
    bom: bool = False
    footer: list[str] = field(default_factory=list)

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


def _too_many(max_rows: int) -> UploadError:
    return UploadError(
        f"The file has more than {max_rows:,} rows: split it into files of at most "
        f"{max_rows:,} rows."
    )


def read_table(data: bytes, *, max_rows: int) -> Table:
    """The rows of an uploaded CSV file, or an ``UploadError`` saying why it cannot be used.
    A report's footer lines at the end are left out of the rows and kept in ``footer``."""
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
        blank_before: set[int] = set()
        blank = 0
        width = len(names)
        for row in reader:
            if not any(cell.strip() for cell in row):
                blank += 1
                blank_before.add(len(rows))
                continue
            if len(rows) == max_rows + FOOTER_ALLOWANCE:
                raise _too_many(max_rows)
            widths.append(len(row))
            rows.append(row + [""] * (width - len(row)) if len(row) < width else row)
    except csv.Error as exc:
        raise UploadError(f"The file is not valid CSV (line {reader.line_num}): {exc}.") from None
    kept = len(rows) - footer_length(rows, blank_before, spellings())
    footer = [" ".join(c.strip() for c in row if c.strip()) for row in rows[kept:]]
    del rows[kept:], widths[kept:]
    if len(rows) > max_rows:
        raise _too_many(max_rows)
    if not rows:
        raise UploadError("The file has a header but no rows of contacts.")
    bom = data.startswith(b"\xef\xbb\xbf")
    return Table(names, rows, widths, delimiter, blank, bom, footer)


# -- which field a column holds ---------------------------------------------------------------

# Which phone columns a guess keeps when a file has more than five: the lines that reach the
# person first, a switchboard last; among equals, the earlier column.
_DIAL_ORDER: dict[str | None, int] = {"mobile": 0, "direct": 1, None: 2, "other": 3, "hq": 4}


def column_type(name: str) -> str | None:
    """The phone type a column's name tells: the export data's (“Mobile Phone Number” is a
    mobile, “Company HQ Phone” a hq line), else a word of it (“Cell (work)”)."""
    return spellings().phone_type(name)


def guess_field(name: str) -> str | None:
    """The contact input field a column named ``name`` most likely holds, if any; ``phone``
    for a phone column (a guess of the whole header puts it in the first free slot)."""
    meaning = spellings().meaning(name)
    return None if meaning is None or meaning.field == crm_exports.EXTRA else meaning.field


def guess_mapping(header: Sequence[str]) -> list[str]:
    """For each column, in order, its guessed field. Phone columns take the slots phone …
    phone5 in column order (the five most dialable when there are more); other fields go to
    the first column naming them, a fallback column's only when no other column holds its
    field. The rest stay extra fields."""
    meanings = [spellings().meaning(name) for name in header]
    mapping = [EXTRA] * len(header)
    taken: set[str] = set()
    for fallback in (False, True):
        for i, meaning in enumerate(meanings):
            if meaning is None or meaning.fallback != fallback:
                continue
            if meaning.field in (crm_exports.EXTRA, PHONE) or meaning.field in taken:
                continue
            if meaning.field not in offered():
                continue  # a phone slot's type or country: chosen with its phone
            taken.add(meaning.field)
            mapping[i] = meaning.field
    phones = [(i, m.phone_type) for i, m in enumerate(meanings) if m is not None and m.is_phone]
    ranked = sorted(phones, key=lambda phone: _DIAL_ORDER[phone[1]])
    for i, kind in ranked[: len(PHONE_SLOTS)]:
        mapping[i] = phone_choice(kind or UNKNOWN)
    return mapping


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
                f"choose \u201c{words().phone_country}\u201d for a column that gives it, "
                "or format the column as Text and export again."
            ),
            False,
        )
    return None, None, False


# A cell holds an extension only with one of these: x, ext, extension, #, ;ext=, a comma.
_EXTENSION_MARK = re.compile(r"[a-zA-Z#;,]")
_TRAILING_NON_DIGITS = re.compile(r"\D+$")


def split_extension(value: str, country: str | None) -> tuple[str, str] | None:
    """A valid number written with an extension, as (the number without it, the extension);
    None for any other cell. The numbering library reads the extension (“x254”, “ext. 15”,
    “extension 15”, “#15”, “;ext=15”); the number keeps its spelling when cutting the
    extension off the end leaves the same number, else it is written in E.164."""
    text = value.strip()
    if not _EXTENSION_MARK.search(text):
        return None
    region = country_or_default(country)
    number = analyse(text, region)
    if number is None or number.extension is None:
        return None
    extension = number.extension
    if text.endswith(extension):
        head = _TRAILING_NON_DIGITS.sub("", text[: -len(extension)])
        alone = analyse(head, region)
        if alone is not None and alone.e164 == number.e164 and alone.extension is None:
            return head, extension
    return number.e164, extension


def _keep_extension(
    contact: dict[str, Any], extra: dict[str, str], slot: str, extension: str
) -> None:
    """The contact has one extension field, for ``phone``: a column mapped to it wins, and
    the number's own extension, when another, is kept as ``phoneExtFromNumber``; the other
    slots' extensions are kept as ``phone2Ext`` … ``phone5Ext``. None is dropped."""
    if slot != PHONE_SLOTS[0]:
        extra[f"{slot}Ext"] = extension
        return
    given = str(contact.get("phoneExt") or "").strip()
    if not given:
        contact["phoneExt"] = extension
    elif given != extension:
        extra["phoneExtFromNumber"] = extension


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
    """The contacts the rows make with ``mapping`` (per column a field, a phone choice,
    ``EXTRA`` or ``IGNORE``): the phone columns fill the slots ``phone`` … ``phone5`` in
    column order, each with the type chosen for it and the numbers' country when a column
    gives it; damaged phones are read as explained in their findings; an extension is split
    off its number (``split_extension``, ``_keep_extension``)."""
    out = Contacts()
    width = len(table.header)
    phones = phone_columns(mapping)
    slot_of = {i: slot for slot, i, _ in phones}
    columns = [
        (i, name, slot_of.get(i, choice))
        for i, (name, choice) in enumerate(zip(table.header, mapping, strict=True))
        if choice != IGNORE and (i in slot_of or not choice.startswith(PHONE_PREFIX))
    ]
    slots = {slot: i for slot, i, _ in phones}
    types = {slot: None if kind == UNKNOWN else kind for slot, _, kind in phones}
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
        numbers_country = contact.pop(PHONE_COUNTRY, None)
        notes: list[str] = []
        for slot, i in slots.items():
            cell = row[i]
            if not cell.strip():
                continue
            told = types[slot]
            if told is not None:
                contact[f"{slot}Type"] = told
            country = numbers_country
            if country is not None:
                contact[f"{slot}Country"] = country
            fixed, message, reject = phone_damage(cell, country)
            if message is not None:
                out.findings.append(Finding(index, table.header[i], cell, reject, message))
                if reject:
                    out.rejected[index] = f"{table.header[i]}: {message}"
                    break
                notes.append(f"{table.header[i]}: {message}")
                if fixed is not None:
                    contact[slot] = fixed
            split = split_extension(contact[slot], country)
            if split is not None:
                contact[slot], extension = split
                _keep_extension(contact, extra, slot, extension)
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


# -- phone columns the mapping leaves unscored ---------------------------------------------------

# The cells of a column of unknown name read to tell whether it holds phone numbers.
PHONE_SAMPLE = 200
_A_DIGIT = re.compile(r"\d")


def unscored_phone_columns(table: Table, mapping: Sequence[str]) -> list[tuple[str, int]]:
    """The columns of phone numbers that ``mapping`` keeps as extra fields or ignores, each
    with the count of its cells holding a number: a column the export data knows as a phone
    column, or one of a name it does not know whose first ``PHONE_SAMPLE`` such cells are
    mostly valid numbers (read in the row's phone country when a column gives it)."""
    known = spellings()
    country = next((i for i, choice in enumerate(mapping) if choice == PHONE_COUNTRY), None)
    unscored: list[tuple[str, int]] = []
    for i, (name, choice) in enumerate(zip(table.header, mapping, strict=True)):
        if choice not in (EXTRA, IGNORE):
            continue
        meaning = known.meaning(name)
        if meaning is not None and not meaning.is_phone:
            continue
        rows = [row for row in table.rows if _A_DIGIT.search(row[i])]
        if not rows:
            continue
        if meaning is None:
            sample = rows[:PHONE_SAMPLE]
            valid = sum(
                analyse(
                    row[i].strip(), country_or_default(None if country is None else row[country])
                )
                is not None
                for row in sample
            )
            if valid * 2 <= len(sample):
                continue
        unscored.append((name, len(rows)))
    return unscored


def rejected_csv(table: Table, reasons: dict[int, str]) -> str:
    """The rejected rows as they were in the file, plus a column of the reason, in the
    file's order, with its delimiter and (when it had one) its byte order mark, so that the
    spreadsheet it came from opens it alike and the fixed rows can be uploaded again."""
    width = max([len(table.header), *(table.widths[i] for i in reasons)])
    buffer = io.StringIO("\ufeff" if table.bom else "")
    buffer.seek(0, io.SEEK_END)
    writer = csv.writer(buffer, delimiter=table.delimiter, lineterminator="\r\n")
    reason = words().column("rejected_reason")
    writer.writerow([*table.header, *[""] * (width - len(table.header)), reason])
    for index in sorted(reasons):
        row = table.rows[index]
        writer.writerow([*row, *[""] * (width - len(row)), reasons[index]])
    return buffer.getvalue()
