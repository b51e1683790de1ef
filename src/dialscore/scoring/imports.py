"""Parsing of the files operators import (do-not-call lists, NANP number blocks, company main
lines): pure, lines in, values and counted rejections out."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dialscore.kit.linefiles import (
    MAX_EXAMPLES,
    FileFormatError,
    LineCounts,
    Rejection,
    column_key,
    quote,
)
from dialscore.phones import e164_or_reason

BLOCK_CATEGORIES = ("wireless", "landline", "voip")
MAX_TEXT = 200

_CATEGORY_SYNONYMS = {
    "wireless": "wireless",
    "mobile": "wireless",
    "cellular": "wireless",
    "cell": "wireless",
    "pcs": "wireless",
    "landline": "landline",
    "wireline": "landline",
    "fixed": "landline",
    "ilec": "landline",
    "clec": "landline",
    "rboc": "landline",
    "cap": "landline",
    "voip": "voip",
    "ipes": "voip",
}

# Bytes a do-not-call line may carry around its digits. Not the line feed: blocks of lines are
# cleaned whole, and their lines must stay apart.
_DNC_SEPARATORS = b" \t\r-().\"'"
_ZERO, _ONE, _PLUS, _HASH, _MINUS = 48, 49, 43, 35, 45
_BOM = "\ufeff".encode()


# -- do-not-call numbers -------------------------------------------------------------------


def _dnc_digits(s: bytes) -> bytes | None:
    """The E.164 digits of a cleaned, non-blank, non-comment do-not-call line; None if invalid.

    bytes.isdigit() is ASCII-only, so no other script's digits get through."""
    if s.isdigit():
        size = len(s)
        if size == 10:
            if s[0] > _ONE and s[3] > _ONE:
                return b"1" + s
        elif size == 11 and s[0] == _ONE and s[1] > _ONE and s[4] > _ONE:
            return s
        return None
    if s[0] == _PLUS:
        rest = s[1:]
        if not rest.isdigit():
            return None
        if rest[0] == _ONE:
            if len(rest) == 11 and rest[1] > _ONE and rest[4] > _ONE:
                return rest
        elif rest[0] != _ZERO and 7 <= len(rest) <= 15:
            return rest
        return None
    area, comma, local = s.partition(b",")
    if comma and len(area) == 3 and len(local) == 7:
        national = area + local
        if national.isdigit() and national[0] > _ONE and national[3] > _ONE:
            return b"1" + national
    return None


def dnc_number(line: str | bytes) -> int | None:
    """The E.164 digits (without ``+``) of one do-not-call line as an integer; None for a line
    that holds no valid number (including blank and comment lines).

    Spaces, tabs, quotes, ``-``, ``(``, ``)`` and ``.`` are ignored. Accepted:

    - ``4155552671``: 10 digits, a NANP number (E.164 ``14155552671``);
    - ``415,5552671``: area code and number, as the US National DNC Registry publishes them;
    - ``14155552671`` and ``+14155552671``: a NANP number with its country code;
    - ``+442079460000``: E.164 of any country (7 to 15 digits after the ``+``).

    NANP area codes and exchanges never start with 0 or 1: such lines are invalid."""
    raw = line.encode("utf-8", errors="replace") if isinstance(line, str) else line
    cleaned = raw.translate(None, _DNC_SEPARATORS + b"\n")
    if not cleaned or cleaned[0] == _HASH:
        return None
    digits = _dnc_digits(cleaned)
    return None if digits is None else int(digits)


def dnc_rejection_reason(line: str | bytes) -> str:
    """Why a line is not a do-not-call number (for the few lines a report quotes)."""
    raw = line.encode("utf-8", errors="replace") if isinstance(line, str) else line
    cleaned = raw.translate(None, _DNC_SEPARATORS + b"\n")
    if b"," in cleaned:
        area, _, local = cleaned.partition(b",")
        if not (len(area) == 3 and len(local) == 7 and (area + local).isdigit()):
            return "area code and number must be 3 and 7 digits"
        return "a NANP area code or exchange cannot start with 0 or 1"
    digits = cleaned.removeprefix(b"+")
    if not digits.isdigit():
        return "not a phone number"
    if cleaned.startswith(b"+") and not digits.startswith(b"1"):
        if digits.startswith(b"0"):
            return "a country code cannot start with 0"
        return "E.164 numbers have 7 to 15 digits"
    if len(digits) == 10 or (len(digits) == 11 and digits.startswith(b"1")):
        return "a NANP area code or exchange cannot start with 0 or 1"
    return "expected 10 digits, 1 and 10 digits, area code and number, or +E.164"


# A change list's add and delete marks (P182), compared in upper case.
DNC_ADD_MARKS = frozenset(b"A ADD ADDED ADDITION ADDITIONS INSERT INSERTED NEW REGISTERED".split())
DNC_DELETE_MARKS = frozenset(
    b"D DEL DELETE DELETED DELETION DELETIONS REMOVE REMOVED REMOVAL DEREGISTERED".split()
)
_DATE_BYTES = frozenset(b"0123456789/:TZ")


def _dnc_date_field(field_: bytes) -> bool:
    """A change-list field that is a date (or date and time), not part of the number: 8, 12 or
    14 digits (``20261101``; dashes and dots are already gone), or digits with ``/``, ``:``,
    ``T``, ``Z`` (``11/01/2026``)."""
    if field_.isdigit():
        return len(field_) in (8, 12, 14)
    return len(field_) >= 6 and all(ch in _DATE_BYTES for ch in field_)


def dnc_change(cleaned: bytes) -> tuple[bytes, bool] | None:
    """A cleaned change-list record (``areacode,number,A``, ``D,4155552671,2026-11-01`` …):
    the number's E.164 digits and whether it is a deletion; None if it is not one. Exactly one
    field must be an add or delete mark; date fields are ignored; the rest is the number."""
    fields = cleaned.split(b",")
    marks = [f for f in fields if f.upper() in DNC_ADD_MARKS or f.upper() in DNC_DELETE_MARKS]
    if len(marks) != 1:
        return None
    at = next(i for i, f in enumerate(fields) if f is marks[0])
    rest = [f for i, f in enumerate(fields) if i != at and f and not _dnc_date_field(f)]
    if not rest:
        return None
    digits = _dnc_digits(b",".join(rest))
    if digits is None:
        return None
    return digits, marks[0].upper() in DNC_DELETE_MARKS


class DncMarkError(FileFormatError):
    """A change list's add or delete mark where the import does not allow one."""


@dataclass
class DncScan(LineCounts):
    """Reads one do-not-call file, block after block of its lines, counting as it goes: one
    number a line (see ``dnc_number``); blank lines, ``#`` comments and a header (words on the
    first line with content) are skipped. A change list's line carries an add or delete mark
    beside the number (``201,5550123,D``; see ``dnc_change``).

    Numbers come out as E.164 digits; a deletion's with a leading ``-``. With ``remove``,
    every number is a deletion (a plain file of numbers to take off), and a marked line is an
    error: the file says itself what to add and what to delete."""

    remove: bool = False
    # Lines with an add or delete mark, and the deletions among all numbers.
    marked: int = field(default=0, init=False)
    deletions: int = field(default=0, init=False)
    _content_seen: bool = field(default=False, init=False, repr=False)

    def feed(self, block: bytes) -> list[bytes]:
        """The E.164 digits of the valid numbers in ``block``: the file's next whole lines,
        joined by ``\\n`` without a final one (so ``b""`` is one blank line)."""
        if self.lines == 0:
            block = block.removeprefix(_BOM)
        cleaned = block.translate(None, _DNC_SEPARATORS).split(b"\n")
        first_line = self.lines + 1
        numbers: list[bytes] = []
        append = numbers.append
        skipped = invalid = 0
        invalid_at: list[int] = []
        for index, line in enumerate(cleaned):
            if not line or line[0] == _HASH:
                skipped += 1
                continue
            digits = _dnc_digits(line)
            if digits is not None:
                append(digits)
                continue
            change = dnc_change(line) if b"," in line else None
            if change is not None:
                self._marked(first_line + index)
                append(b"-" + change[0] if change[1] else change[0])
                continue
            # The first line with content may be a header: words, not a number.
            if not (self._content_seen or numbers or invalid) and line.lower() != line.upper():
                self._content_seen = True
                skipped += 1
                continue
            invalid += 1
            if len(invalid_at) + len(self.rejections) < MAX_EXAMPLES:
                invalid_at.append(index)
        if numbers or invalid:
            self._content_seen = True
        if invalid_at:
            raw_lines = block.split(b"\n")
            for index in invalid_at:
                raw = raw_lines[index]
                self.rejections.append(
                    Rejection(first_line + index, quote(raw), dnc_rejection_reason(raw))
                )
        self.lines += len(cleaned)
        self.accepted += len(numbers)
        self.skipped += skipped
        self.invalid += invalid
        if self.remove:
            numbers = [b"-" + digits for digits in numbers]
            self.deletions += len(numbers)
        elif self.marked:
            self.deletions += sum(1 for digits in numbers if digits[0] == _MINUS)
        return numbers

    def _marked(self, line: int) -> None:
        if self.remove:
            raise DncMarkError(
                f"line {line} has an add or delete mark: --remove is for plain files of "
                "numbers; a change list says itself what to add and what to delete"
            )
        self.marked += 1


# -- CSV files -------------------------------------------------------------------------------


@dataclass
class CsvCounts(LineCounts):
    """Line counts of a CSV file, and which value columns its header names, by the field names
    of its rows: a row's value for a column the file lacks means nothing (the loader leaves
    that value of a known row as it was, while an empty cell clears it)."""

    columns: frozenset[str] = frozenset()


def _find(header: dict[str, int], *names: str) -> int | None:
    for name in names:
        if name in header:
            return header[name]
    return None


def _csv_rows(
    lines: Iterable[str],
    counts: LineCounts,
    columns: Callable[[dict[str, int]], None],
) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of every data row; the first non-blank, non-comment row is the
    header, handed to ``columns`` (which raises FileFormatError if it lacks a column)."""
    reader = csv.reader(lines)
    header_seen = False
    last = 0
    for cells in _csv_records(reader):
        line = last + 1
        last = reader.line_num
        counts.lines = last
        if not cells or not "".join(cells).strip() or cells[0].lstrip().startswith("#"):
            counts.skipped += 1
            continue
        if not header_seen:
            header_seen = True
            counts.skipped += 1
            header: dict[str, int] = {}
            for position, name in enumerate(cells):
                header.setdefault(column_key(name), position)
            columns(header)
            continue
        yield line, cells
    if not header_seen:
        columns({})


def _csv_records(reader: Any) -> Iterator[list[str]]:
    try:
        yield from reader
    except csv.Error as exc:
        raise FileFormatError(f"line {reader.line_num}: {exc}") from exc


def _cell(cells: list[str], position: int | None) -> str:
    if position is None or position >= len(cells):
        return ""
    return cells[position].strip()


def _shorten(text: str) -> str | None:
    return text[:MAX_TEXT] or None


@dataclass(frozen=True)
class NumberBlockRow:
    prefix: str
    category: str
    carrier: str | None


def block_category(value: str) -> str | None:
    """The category a published carrier category stands for: ``wireless`` (also ``mobile``,
    ``cellular``, ``cell``, ``pcs``), ``landline`` (also ``wireline``, ``fixed``, ``ilec``,
    ``clec``, ``rboc``, ``cap``) or ``voip`` (also ``ipes``); None for anything else."""
    return _CATEGORY_SYNONYMS.get(value.strip().lower())


def _nanp_part(text: str, size: int) -> str | None:
    return text if len(text) == size and text.isascii() and text.isdigit() else None


def _block_prefix(prefix: str, npa: str, nxx: str, x: str) -> str | None:
    if prefix:
        digits = "".join(ch for ch in prefix if ch not in " -.")
        if not (digits.isascii() and digits.isdigit() and len(digits) in (6, 7)):
            return None
    else:
        if _nanp_part(npa, 3) is None or _nanp_part(nxx, 3) is None:
            return None
        if x and _nanp_part(x, 1) is None:
            return None
        digits = npa + nxx + x
    return digits if digits[0] > "1" and digits[3] > "1" else None


def scan_number_blocks(lines: Iterable[str], counts: CsvCounts) -> Iterator[NumberBlockRow]:
    """The blocks of a number-block CSV file. Its header names the columns (compared without
    case, spaces, ``_``, ``-`` or ``.``):

    - the block: ``prefix`` (also ``block``, ``npanxx``, ``npanxxx``: 6 digits NPA-NXX or 7
      digits NPA-NXX-X, separators allowed), or ``npa`` and ``nxx`` with an optional ``x``
      (also ``thousands``, ``blockid``: one digit, empty for a whole NPA-NXX);
    - ``category`` (also ``type``, ``linetype``, ``carriertype``, ``ocntype``), normalised by
      ``block_category``; any other value rejects the row;
    - optional ``carrier`` (also ``company``, ``ocnname``, ``carriername``), cut to 200
      characters.

    Blank lines and lines starting with ``#`` are skipped."""
    found: dict[str, int | None] = {}

    def columns(header: dict[str, int]) -> None:
        found["prefix"] = _find(header, "prefix", "block", "npanxx", "npanxxx")
        found["npa"] = _find(header, "npa")
        found["nxx"] = _find(header, "nxx")
        found["x"] = _find(header, "x", "thousands", "blockid")
        found["category"] = _find(header, "category", "type", "linetype", "carriertype", "ocntype")
        found["carrier"] = _find(header, "carrier", "company", "ocnname", "carriername")
        has_block = found["prefix"] is not None or (
            found["npa"] is not None and found["nxx"] is not None
        )
        if not has_block or found["category"] is None:
            raise FileFormatError(
                "a number-block file needs a header with the columns prefix,category[,carrier] "
                "or npa,nxx[,x],category[,carrier]"
            )
        counts.columns = frozenset(
            {"category"} | ({"carrier"} if found["carrier"] is not None else set())
        )

    for line, cells in _csv_rows(lines, counts, columns):
        prefix = _block_prefix(
            _cell(cells, found["prefix"]),
            _cell(cells, found["npa"]),
            _cell(cells, found["nxx"]),
            _cell(cells, found["x"]),
        )
        if prefix is None:
            counts.reject(line, ",".join(cells), "not a NANP block: NPA-NXX or NPA-NXX-X")
            continue
        raw_category = _cell(cells, found["category"])
        category = block_category(raw_category)
        if category is None:
            counts.reject(line, ",".join(cells), f"unknown category: {raw_category!r}")
            continue
        counts.accepted += 1
        yield NumberBlockRow(prefix, category, _shorten(_cell(cells, found["carrier"])))


@dataclass(frozen=True)
class CompanyLineRow:
    number: str
    company: str | None
    ivr_path: str | None


def company_line_number(text: str) -> str | None:
    """The E.164 form of a company's main line (US the default region); None when the text
    is not a valid number or carries an extension."""
    return e164_or_reason(text)[0]


def scan_company_lines(lines: Iterable[str], counts: CsvCounts) -> Iterator[CompanyLineRow]:
    """The lines of a company-lines CSV file with the header ``number,company,ivrPath``:
    ``number`` (also ``phone``; see ``company_line_number``), optional ``company`` (cut to 200
    characters) and ``ivrPath`` (also ``ivr``: printable, at most 200 characters, empty for
    none). Blank lines and lines starting with ``#`` are skipped."""
    found: dict[str, int | None] = {}

    def columns(header: dict[str, int]) -> None:
        found["number"] = _find(header, "number", "phone", "phonenumber")
        found["company"] = _find(header, "company", "companyname")
        found["ivr"] = _find(header, "ivrpath", "ivr")
        if found["number"] is None:
            raise FileFormatError(
                "a company-lines file needs a header with the columns number,company,ivrPath"
            )
        counts.columns = frozenset(
            name
            for name, key in (("company", "company"), ("ivr_path", "ivr"))
            if found[key] is not None
        )

    for line, cells in _csv_rows(lines, counts, columns):
        number = company_line_number(_cell(cells, found["number"]))
        if number is None:
            counts.reject(line, ",".join(cells), "not a valid phone number without extension")
            continue
        ivr_path = _cell(cells, found["ivr"])
        if len(ivr_path) > MAX_TEXT:
            counts.reject(line, ",".join(cells), f"ivrPath is longer than {MAX_TEXT} characters")
            continue
        if not ivr_path.isprintable():
            counts.reject(line, ",".join(cells), "ivrPath must contain only printable characters")
            continue
        counts.accepted += 1
        yield CompanyLineRow(number, _shorten(_cell(cells, found["company"])), ivr_path or None)
