"""The directory import: people the operator loads from a CSV or JSON Lines file, streamed
into ``directory_people`` in large batches with their lookup keys (re-importable).

**Columns** (CSV header names, and JSON Lines keys, compared without case, spaces, ``_``,
``-`` or ``.``): ``id`` (optional stable record id, at most 64 characters), ``firstName``,
``lastName``, ``email``, ``linkedInUrl``, ``company``, ``website``, ``companyLinkedInUrl``,
``title``; phones as ``phone``/``phoneType``, ``phone2``/``phone2Type``, … (any number, also
``phone1``), ``mobilePhone``, ``directPhone`` and ``hqPhone`` (typed by their name), or one
``phones`` column of ``number:type`` pairs separated by ``;`` (JSON Lines: a list of
``{"number": …, "type": …}`` objects or of strings). Other columns are ignored and named in
the report.

**Phones** are stored in E.164 (a number without ``+`` is read as a US number); a number that
is not valid, or carries an extension, is dropped and counted. Types are ``mobile``,
``direct``, ``hq`` or ``other`` (synonyms as in submissions); a number given twice is kept
once.

**Rows.** A row must be matchable: an email (not a role address such as ``info@``), a
LinkedIn profile URL, or a first and last name with a company (its name, website, a company
email or LinkedIn page). Other rows, and rows with a value longer than its column, are
invalid and reported with the first few quoted.

**Record identity**, which makes a re-import update records instead of adding them: the
``id`` column when the row has one; else a digest of the canonical LinkedIn slug (``li:…``);
else of the normalised email (``em:…``); else of the folded first and last name with the
company (``nc:…``). A record whose derived identity changes between imports (say, a LinkedIn
URL added to a row that had only an email) becomes a new record: give ``id`` for stable
re-imports. A re-imported record takes the file's values for every column; one given again
later in the same file, likewise (the later row wins).

**How.** The file is cut into blocks of whole lines (CSV: never inside a quoted field). A
large file is parsed in worker processes, which on SQLite also write what they parse, chunk by
chunk in file order; on PostgreSQL this process writes. Rows go through the driver (no ORM),
in transactions of at most ``BATCH_ROWS``: SQLite with one ``executemany`` of ``INSERT … ON
CONFLICT (id) DO UPDATE … WHERE`` the row changed (the indexed keys set after, where they
differ); PostgreSQL with ``COPY`` into a temporary table and one such ``INSERT … SELECT``.
Unchanged records keep their ``updated_at``. On SQLite, an import into an empty directory
appends the rows without any index, settles the records given again at its end and then
builds the indexes (an import stopped midway leaves them to the next import, which builds
them first)."""

from __future__ import annotations

import csv
import hashlib
import json
import marshal
import multiprocessing
import os
import re
import sqlite3
import threading
import time
from array import array
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, lru_cache
from itertools import groupby, pairwise
from operator import itemgetter
from pathlib import Path
from typing import IO, Any
from zlib import crc32

from sqlalchemy import Table

from dialscore.enrichment.matching import (
    company_domain,
    company_linkedin_slug,
    company_name_key,
    dominant_domains,
    name_tokens,
    record_key_values,
    use_large_memos,
)
from dialscore.kit.bulkload import (
    DriverConnection,
    Progress,
    analyze,
    connect,
    no_progress,
    prefetching,
    sqlite_transaction,
)
from dialscore.kit.linefiles import (
    MAX_EXAMPLES,
    FileFormatError,
    LineCounts,
    Rejection,
    column_key,
    quote,
)
from dialscore.phones import e164_or_reason, normalise_type

# Rows per write transaction: on SQLite, 50 000 rows into a table of a million hold the write
# lock for about a second (the service's writers wait, busy_timeout is 30 s).
BATCH_ROWS = 50_000
# Bytes of whole lines per parsed block.
BLOCK_BYTES = 1 << 20
# A line (or quoted field) longer than this is not a directory file's.
MAX_LINE_BYTES = 64 << 20
# Files from this size are parsed in worker processes (each costs about half a second to
# start, so small files are parsed in this process).
POOL_MIN_BYTES = 16 << 20
MAX_WORKERS = 4
# Blocks handed to the workers ahead of the writer: enough to keep them busy while it writes.
IN_FLIGHT_BLOCKS = 16
MAX_ID = 64
MAX_IGNORED = 50
FIELDS = ("firstName", "lastName", "email", "linkedInUrl", "company", "website",
          "companyLinkedInUrl", "title")  # fmt: skip
# The widths of directory_people's columns, by field.
WIDTHS = (200, 200, 320, 500, 300, 300, 500, 300)
_NARROWEST = min(WIDTHS)
_FIRST, _LAST, _EMAIL, _LINKEDIN, _COMPANY, _WEBSITE, _COMPANY_PAGE, _TITLE = range(8)
# The table's columns in the order rows carry them (updated_at is added when writing).
COLUMNS = (
    "id", "first_name", "last_name", "email", "linkedin_url", "company", "website",
    "company_linkedin_url", "title", "phones", "email_key", "linkedin_key", "last_name_key",
    "company_key", "first_initial", "company_name_key", "company_domain", "company_page",
)  # fmt: skip
TABLE = "directory_people"

Row = tuple[str | None, ...]

_FIELD_NAMES = {
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
_KNOWN_KEYS = frozenset(alias for aliases in _FIELD_NAMES.values() for alias in aliases)
_TYPED_PHONES = {"mobilephone": "mobile", "directphone": "direct", "hqphone": "hq"}
_PHONE_SLOT = re.compile(r"phone(\d*)")
_PHONE_KEY = re.compile(r"phones|phone\d*(?:type)?|mobilephone|directphone|hqphone")
# A record appended to a CSV block: read back as a record of its own, it shows that the block
# ended outside quotes (else it was swallowed by a quoted field the block cut through).
_SENTINEL = "\ue000dialscore-block-end\ue000"
_NO_IDENTITY = (
    "cannot be matched: needs an email, a LinkedIn profile URL, or a first and last name "
    "with a company (name, website or LinkedIn page)"
)


@dataclass
class DirectoryCounts(LineCounts):
    """What became of a directory file's lines, and of the phones its rows carried."""

    phones: int = 0
    invalid_phones: int = 0
    phone_rejections: list[Rejection] = field(default_factory=list)
    rows_without_phones: int = 0
    ignored_columns: tuple[str, ...] = ()

    def reject_phone(self, line: int, text: str, reason: str) -> None:
        self.invalid_phones += 1
        if len(self.phone_rejections) < MAX_EXAMPLES:
            self.phone_rejections.append(Rejection(line, quote(text), reason))

    def add(self, block: DirectoryCounts) -> None:
        """Adds the counts of the file's next block."""
        self.lines += block.lines
        self.accepted += block.accepted
        self.skipped += block.skipped
        self.invalid += block.invalid
        self.rejections += block.rejections[: MAX_EXAMPLES - len(self.rejections)]
        self.phones += block.phones
        self.invalid_phones += block.invalid_phones
        room = MAX_EXAMPLES - len(self.phone_rejections)
        self.phone_rejections += block.phone_rejections[:room]
        self.rows_without_phones += block.rows_without_phones
        if block.ignored_columns:
            ignored = dict.fromkeys((*self.ignored_columns, *block.ignored_columns))
            self.ignored_columns = tuple(ignored)[:MAX_IGNORED]


@dataclass(frozen=True)
class DirectoryReport:
    counts: DirectoryCounts
    format: str  # "csv" | "jsonl"
    imported: int
    updated: int
    unchanged: int
    seconds: float


# -- phones -----------------------------------------------------------------------------------


# What a directory writes where no number is known ("n/a", "000-000-0000") repeats, and so do
# the numbers of a company's main line.
@lru_cache(maxsize=4096)
def phone_e164(text: str) -> tuple[str | None, str]:
    """The E.164 form of a directory phone (a number without ``+`` is read as a US number),
    else None and why: not a number, not a valid one, or one with an extension."""
    return e164_or_reason(text)


@lru_cache(maxsize=1024)
def _phone_type(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    return normalise_type(value)


def _phones_json(
    phones: Sequence[tuple[str, str | None]], line: int, counts: DirectoryCounts
) -> str:
    """The row's valid phones as the table's JSON, ``[{"number": E.164, "type": …}]``, in the
    JSON library's default layout (as SQLAlchemy writes it), each number once."""
    entries: dict[str, str | None] = {}
    counts.phones += len(phones)
    for raw, kind in phones:
        number, reason = phone_e164(raw)
        if number is None:
            counts.reject_phone(line, raw, reason)
        elif entries.get(number) is None:
            entries[number] = kind
    if not entries:
        counts.rows_without_phones += 1
        return "[]"
    # Numbers are "+" and digits and types come from a fixed set: nothing to escape.
    items = [
        f'{{"number": "{n}", "type": "{k}"}}' if k else f'{{"number": "{n}", "type": null}}'
        for n, k in entries.items()
    ]
    return "[" + ", ".join(items) + "]"


def _phones_cell(text: str) -> list[tuple[str, str | None]]:
    """``number:type;number:type`` (the type optional) as (number, type) pairs."""
    found: list[tuple[str, str | None]] = []
    for part in text.split(";"):
        number, colon, kind = part.rpartition(":")
        if not colon:
            number, kind = kind, ""
        if number.strip():
            found.append((number.strip(), _phone_type(kind)))
    return found


# -- rows -------------------------------------------------------------------------------------


class _RowError(ValueError):
    pass


def _digest(kind: str, key: str) -> str:
    return f"{kind}:" + hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def _company_evidence(values: Sequence[str | None]) -> str | None:
    name = company_name_key(values[_COMPANY])
    if name:
        return "name:" + name
    for value in (values[_WEBSITE], values[_EMAIL]):
        domain = company_domain(value)
        if domain:
            return "domain:" + domain
    page = company_linkedin_slug(values[_COMPANY_PAGE])
    return "page:" + page if page else None


def build_row(
    record_id: str | None,
    values: Sequence[str | None],
    phones: Sequence[tuple[str, str | None]],
    line: int,
    counts: DirectoryCounts,
) -> Row:
    """The table row of one record (``values`` in ``FIELDS`` order, stripped, empty as
    None); raises _RowError when the row is invalid."""
    if record_id is not None and len(record_id) > MAX_ID:
        raise _RowError(f"id is longer than {MAX_ID} characters")
    if max(map(len, filter(None, values)), default=0) > _NARROWEST:
        for name, value, width in zip(FIELDS, values, WIDTHS, strict=True):
            if value is not None and len(value) > width:
                raise _RowError(f"{name} is longer than {width} characters")
    keys = record_key_values(*values[:_TITLE])
    email, linkedin, last_name = keys[:3]
    if record_id is None:
        if linkedin is not None:
            record_id = _digest("li", linkedin)
        elif email is not None:
            record_id = _digest("em", email)
    if linkedin is None and email is None:
        first = "".join(name_tokens(values[_FIRST]))
        company = _company_evidence(values) if first and last_name else None
        if company is None:
            raise _RowError(_NO_IDENTITY)
        record_id = record_id or _digest("nc", f"{first}|{last_name}|{company}")
    # The keys come in the table's order of them (COLUMNS).
    return (record_id, *values, _phones_json(phones, line, counts), *keys)


# Every import finds again the company names the directory shows with several domains (borne
# by several companies), each with the domain most of its people work at (of equals, the
# first in order): what enrichment.matching.dominant_domains makes of the counts.
COMPANY_DOMAINS_SQL = (
    "DELETE FROM directory_company_domains",
    "INSERT INTO directory_company_domains (name_key, domain, people) "
    "SELECT name_key, domain, people FROM (SELECT company_name_key AS name_key, "
    "company_domain AS domain, count(*) AS people, row_number() OVER (PARTITION BY "
    "company_name_key ORDER BY count(*) DESC, company_domain) AS rank, count(*) OVER "
    "(PARTITION BY company_name_key) AS domains FROM directory_people "
    "WHERE company_name_key IS NOT NULL AND company_domain IS NOT NULL "
    "GROUP BY company_name_key, company_domain) AS counted WHERE rank = 1 AND domains > 1",
)
# And the company name key and domain most of the records with each company page show.
COMPANY_PAGES_SQL = (
    "DELETE FROM directory_company_pages",
    "INSERT INTO directory_company_pages (page, name_key, domain, people) "
    "SELECT page, name_key, domain, people FROM (SELECT company_page AS page, "
    "company_name_key AS name_key, company_domain AS domain, count(*) AS people, "
    "row_number() OVER (PARTITION BY company_page ORDER BY count(*) DESC, "
    "company_name_key NULLS LAST, company_domain NULLS LAST) AS rank FROM directory_people "
    "WHERE company_page IS NOT NULL AND "
    "(company_name_key IS NOT NULL OR company_domain IS NOT NULL) "
    "GROUP BY company_page, company_name_key, company_domain) AS counted WHERE rank = 1",
)
COMPANY_TABLES_SQL = COMPANY_DOMAINS_SQL + COMPANY_PAGES_SQL

# How many rows show each (company name key, company domain, company page): the rows' last
# three columns, counted as they are parsed.
CompanyCounts = dict[tuple[str | None, ...], int]
# An import counts at most this many of them (about 350 bytes each; a million rows of the
# directory bench show 174 000); past it, the company tables are counted in the database.
MAX_COMPANY_COUNTS = 1 << 20


def _tally_companies(rows: Sequence[Row], counts: CompanyCounts) -> None:
    for row in rows:
        key = row[-3:]
        counts[key] = counts.get(key, 0) + 1


def _page_rank(entry: tuple[str | None, str | None, int]) -> tuple[object, ...]:
    """A page's (name key, domain, people) in COMPANY_PAGES_SQL's order: most people first,
    then by name key and domain, the unknown last."""
    name, domain, people = entry
    return -people, name is None, name or "", domain is None, domain or ""


# The rows of directory_company_domains and of directory_company_pages.
CompanyTableRows = tuple[list[tuple[str, str, int]], list[tuple[str, str | None, str | None, int]]]


def company_table_rows(counts: CompanyCounts) -> CompanyTableRows:
    """The rows COMPANY_TABLES_SQL writes into ``directory_company_domains`` and
    ``directory_company_pages`` for a directory whose rows show these counts."""
    pairs: dict[tuple[str, str], int] = {}
    by_page: dict[str, list[tuple[str | None, str | None, int]]] = {}
    for (name, domain, page), people in counts.items():
        if not people:
            continue
        if name is not None and domain is not None:
            pairs[name, domain] = pairs.get((name, domain), 0) + people
        if page is not None and (name is not None or domain is not None):
            by_page.setdefault(page, []).append((name, domain, people))
    domains = [
        (name, domain, pairs[name, domain])
        for name, domain in dominant_domains((n, d, c) for (n, d), c in pairs.items()).items()
    ]
    pages = [(page, *min(entries, key=_page_rank)) for page, entries in by_page.items()]
    return domains, pages


# -- blocks of lines --------------------------------------------------------------------------


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
        for alias in _FIELD_NAMES[name]:
            if alias in position:
                used.add(position[alias])
                return position[alias]
        return width

    id_at = find("id")
    positions = tuple(find(name) for name in FIELDS)
    phones: list[tuple[int, str | None, int]] = []
    for index, key in enumerate(keys):
        if key in _TYPED_PHONES:
            phones.append((index, _TYPED_PHONES[key], width))
            used.add(index)
            continue
        slot = _PHONE_SLOT.fullmatch(key)
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


@dataclass
class BlockResult:
    rows: list[Row]
    counts: DirectoryCounts
    layout: CsvLayout | None
    # False when a CSV block ended inside a quoted field: it must be read again with the next.
    clean: bool = True
    # The rows packed with marshal, as a worker process hands them back (for tuples of
    # strings, 1.7 µs a row to pack and unpack against pickle's 2.8).
    packed: bytes | None = None
    companies: CompanyCounts = field(default_factory=dict)

    def unpacked(self) -> list[Row]:
        if self.packed is None:
            return self.rows
        rows: list[Row] = marshal.loads(self.packed)
        return rows


def _ready() -> None:
    """A worker's first task: its answer shows it has started."""


def parse_packed(
    kind: str,
    layout: CsvLayout | None,
    first_line: int,
    data: bytes,
    final: bool,
    count_companies: bool,
) -> BlockResult:
    """``parse_block`` in a worker process: the rows packed."""
    result = parse_block(kind, layout, first_line, data, final, count_companies=count_companies)
    result.packed, result.rows = marshal.dumps(result.rows), []
    return result


def _physical_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def parse_block(
    kind: str,
    layout: CsvLayout | None,
    first_line: int,
    data: bytes,
    final: bool,
    *,
    count_companies: bool = True,
) -> BlockResult:
    """The rows of a block of whole lines of the file, which start at line ``first_line``;
    ``final`` for the file's last block. A CSV block before the header finds it. With
    ``count_companies``, how many rows show each company (for an import into an empty
    directory)."""
    counts = DirectoryCounts(lines=_physical_lines(data))
    text = data.decode("utf-8", errors="replace")
    if first_line == 1:
        text = text.removeprefix("\ufeff")
    if kind == "jsonl":
        result = BlockResult(_jsonl_block(text, first_line, counts), counts, None)
    else:
        result = _csv_block(text, first_line, layout, counts, final)
    if count_companies:
        _tally_companies(result.rows, result.companies)
    return result


class _Lines:
    """A block's lines for ``csv.reader``, which takes from where the caller stopped."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.at = 0

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if self.at >= len(self.lines):
            raise StopIteration
        self.at += 1
        return self.lines[self.at - 1] + "\n"


def _csv_block(
    text: str, first_line: int, layout: CsvLayout | None, counts: DirectoryCounts, final: bool
) -> BlockResult:
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    if not final:
        lines.append(_SENTINEL)
    feed = _Lines(lines)
    reader = csv.reader(feed)
    rows: list[Row] = []
    clean = final
    positions, phone_positions = (layout.positions, layout.phones) if layout else ((), ())
    try:
        while feed.at < len(lines):
            line = first_line + feed.at
            body = lines[feed.at]
            if body.endswith("\r"):
                body = body[:-1]
            if '"' in body or "\r" in body:
                cells = next(reader)  # quoted: the csv module reads the whole record
            else:
                # Without quotes, a record is its line, and its cells what commas part.
                feed.at += 1
                cells = body.split(",")
                if not final and body == _SENTINEL and feed.at == len(lines):
                    clean = True
                    break
            head = cells[0].lstrip() if cells else ""
            if head.startswith("#") or (not head and not "".join(cells).strip()):
                counts.skipped += 1
                continue
            if layout is None:
                counts.skipped += 1
                layout, counts.ignored_columns = csv_layout(cells)
                positions, phone_positions = layout.positions, layout.phones
                continue
            width = layout.width
            if len(cells) <= width:
                cells += [""] * (width + 1 - len(cells))
            values = [cells[at].strip() or None for at in positions]
            phones: list[tuple[str, str | None]] = []
            for at, fixed, type_at in phone_positions:
                number = cells[at].strip()
                if number:
                    phones.append((number, fixed or _phone_type(cells[type_at])))
            listed = cells[layout.phones_cell]
            if listed:
                phones += _phones_cell(listed)
            try:
                row = build_row(cells[layout.id_at].strip() or None, values, phones, line, counts)
            except _RowError as exc:
                counts.reject(line, ",".join(cells[:width]), str(exc))
                continue
            counts.accepted += 1
            rows.append(row)
    except (csv.Error, StopIteration) as exc:
        if not final:
            return BlockResult([], counts, layout, clean=False)
        raise FileFormatError(f"line {first_line + feed.at - 1}: {exc}") from exc
    return BlockResult(rows, counts, layout, clean)


def _json_text(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _RowError(f"{name} must be a string")
    return str(value).strip() or None


def _json_phones(record: dict[str, Any], by_key: dict[str, str]) -> list[tuple[str, str | None]]:
    """A JSON Lines record's phones: its ``phones`` list, then its phone keys."""
    phones: list[tuple[str, str | None]] = []
    listed = record.get(by_key["phones"]) if "phones" in by_key else None
    if listed is not None:
        if not isinstance(listed, list):
            raise _RowError("phones must be a list of {number, type} objects")
        for entry in listed:
            if isinstance(entry, str | int) and not isinstance(entry, bool):
                number, kind = str(entry), None
            elif isinstance(entry, dict):
                number = _json_text(entry, "number") or ""
                kind = _phone_type(_json_text(entry, "type"))
            else:
                raise _RowError("phones must be a list of {number, type} objects")
            if number.strip():
                phones.append((number.strip(), kind))
    for folded, key in by_key.items():
        if folded in _TYPED_PHONES:
            typed = _json_text(record, key)
            if typed:
                phones.append((typed, _TYPED_PHONES[folded]))
        elif _PHONE_SLOT.fullmatch(folded):
            slotted = _json_text(record, key)
            if slotted:
                type_key = by_key.get(folded + "type")
                kind = None if type_key is None else _json_text(record, type_key)
                phones.append((slotted, _phone_type(kind)))
    return phones


def _jsonl_block(text: str, first_line: int, counts: DirectoryCounts) -> list[Row]:
    rows: list[Row] = []
    ignored: dict[str, None] = {}
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    for line, line_text in enumerate(lines, start=first_line):
        if not line_text.strip():
            counts.skipped += 1
            continue
        try:
            record = json.loads(line_text)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            counts.reject(line, line_text, "not a JSON object")
            continue
        by_key = {column_key(key): key for key in record}
        try:
            values = []
            for name in FIELDS:
                key = next((by_key[a] for a in _FIELD_NAMES[name] if a in by_key), None)
                values.append(None if key is None else _json_text(record, key))
            id_key = next((by_key[a] for a in _FIELD_NAMES["id"] if a in by_key), None)
            record_id = None if id_key is None else _json_text(record, id_key)
            row = build_row(record_id, values, _json_phones(record, by_key), line, counts)
        except _RowError as exc:
            counts.reject(line, line_text, str(exc))
            continue
        for folded, key in by_key.items():
            if folded not in _KNOWN_KEYS and not _PHONE_KEY.fullmatch(folded):
                ignored.setdefault(key, None)
        counts.accepted += 1
        rows.append(row)
    counts.ignored_columns = tuple(ignored)[:MAX_IGNORED]
    return rows


def _first_character(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]


def file_format(path: Path) -> str:
    """``jsonl`` for ``.jsonl``, ``.ndjson`` and ``.json`` files, ``csv`` for ``.csv``; any
    other name by its first character that is not blank: ``{`` or ``[`` is JSON."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    return "jsonl" if _first_character(path) in (b"{", b"[") else "csv"


def _cut(data: bytes, kind: str) -> int:
    """Where a block of ``data`` ends: after its last line feed (CSV: the last one outside
    quotes, as far as an even number of quote characters before it shows); -1 for none."""
    cut = data.rfind(b"\n")
    if kind != "csv" or cut < 0:
        return cut
    odd = data.count(b'"', 0, cut) % 2
    while odd and cut >= 0:
        earlier = data.rfind(b"\n", 0, cut)
        odd ^= data.count(b'"', earlier + 1, cut) % 2
        cut = earlier
    return cut


@dataclass(frozen=True)
class _Block:
    data: bytes
    first_line: int
    end: int  # the file position after it
    final: bool

    @property
    def start(self) -> int:
        return self.end - len(self.data)


class _LineReader:
    """A file's whole lines in blocks of about the size asked for at each read, from
    ``position``, where line ``line`` begins; the last block, final, holds what follows the
    last line feed (often nothing)."""

    def __init__(self, handle: IO[bytes], kind: str, position: int = 0, line: int = 1) -> None:
        handle.seek(position)
        self.handle = handle
        self.kind = kind
        self.position = position
        self.line = line
        self.carry = b""
        self.done = False

    def read(self, size: int) -> _Block | None:
        """The next block, None after the final one."""
        if self.done:
            return None
        while chunk := self.handle.read(size):
            self.position += len(chunk)
            data = self.carry + chunk
            cut = _cut(data, self.kind)
            if cut < 0:
                if len(data) > MAX_LINE_BYTES:
                    raise FileFormatError(
                        f"line {self.line}: longer than {MAX_LINE_BYTES >> 20} MiB (CSV: or "
                        "an unterminated quoted field)"
                    )
                self.carry = data
                continue
            block, self.carry = data[: cut + 1], data[cut + 1 :]
            found = _Block(block, self.line, self.position - len(self.carry), final=False)
            self.line += block.count(b"\n")
            return found
        self.done = True
        return _Block(self.carry, self.line, self.position, final=True)

    def blocks(self, size: int) -> Iterator[_Block]:
        while (block := self.read(size)) is not None:
            yield block


def _pool_size(size: int, workers: int | None) -> int:
    if workers is not None:
        return workers
    if size < POOL_MIN_BYTES:
        return 0
    # A worker for each core: this process, which writes, spends most of its time in the
    # database, which lets go of the interpreter (on two cores, a million rows went in 18k
    # rows/s with two workers, 14k with one, 12k with three).
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def _context() -> multiprocessing.context.BaseContext:
    """Where the workers come from: forked from this process when it runs no other thread
    (the command does, unless it draws a progress bar), which takes milliseconds; else from
    a server process that has imported this module (started once, fresh: none of this
    process's threads or connections), which takes about a second the first time; spawned
    where there is no fork."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


class _BlockParser:
    """Parses a file's blocks in order: in ``workers`` processes (none: here), each CSV block
    once the header is known; a CSV block cut through a quoted field is parsed again joined
    with the next. Reads from ``reader``'s position, with ``layout`` when the header is
    known; counts the companies of the rows with ``count_companies``."""

    def __init__(
        self,
        reader: _LineReader,
        block_bytes: int,
        layout: CsvLayout | None = None,
        *,
        count_companies: bool = True,
    ) -> None:
        self.kind = reader.kind
        self.blocks = reader.blocks(block_bytes)
        self.layout = layout
        self.count_companies = count_companies
        self.pending: deque[tuple[_Block, Future[BlockResult] | None]] = deque()

    def results(self, workers: int) -> Iterator[tuple[BlockResult, int]]:
        """(parsed block, file position after it), in file order. Parsed here, a block is
        yielded before the next is read."""
        with ExitStack() as stack:
            pool = None
            ready: Future[None] | None = None
            if workers > 0:
                pool = stack.enter_context(
                    ProcessPoolExecutor(workers, _context(), initializer=use_large_memos)
                )
                # The first pool of a process waits a second or two for its server to
                # start; until a worker answers, blocks are parsed here.
                ready = pool.submit(_ready)
            for block in self.blocks:
                # A CSV file's blocks need its header, which the first one parsed here finds.
                if pool is None or not ready or not ready.done() or not self.knows_layout:
                    self.pending.append((block, None))
                else:
                    args = (self.kind, self.layout, block.first_line, block.data, block.final)
                    future = pool.submit(parse_packed, *args, self.count_companies)
                    self.pending.append((block, future))
                # Enough blocks in flight to keep the workers busy while a batch is written;
                # one to parse here is parsed at once.
                if len(self.pending) >= IN_FLIGHT_BLOCKS or self.pending[0][1] is None:
                    yield self._settle()
            while self.pending:
                yield self._settle()

    @property
    def knows_layout(self) -> bool:
        """Whether its blocks can be parsed anywhere: a CSV file's header has been read."""
        return self.kind != "csv" or self.layout is not None

    def _parse(self, block: _Block) -> BlockResult:
        return parse_block(
            self.kind,
            self.layout,
            block.first_line,
            block.data,
            block.final,
            count_companies=self.count_companies,
        )

    def _settle(self) -> tuple[BlockResult, int]:
        block, future = self.pending.popleft()
        result = self._parse(block) if future is None else future.result()
        while not result.clean:
            if self.pending:
                following, later = self.pending.popleft()
                if later is not None:
                    later.cancel()
            else:
                following = next(self.blocks)
            block = _Block(
                block.data + following.data, block.first_line, following.end, following.final
            )
            result = self._parse(block)
        if result.layout is not None:
            self.layout = result.layout
        return result, block.end


# -- writing ----------------------------------------------------------------------------------

_VALUES = COLUMNS[1:]


def _sqlite_timestamp(now: datetime) -> str:
    # SQLAlchemy's layout of a naive UTC datetime on SQLite.
    return now.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")


class _Writer:
    """Upserts batches of rows with distinct ids, counting new, changed and unchanged ones;
    the records it adds or changes take ``now`` as their ``updated_at``. Into an empty
    directory (``deferred``, SQLite: no indexes until the end), it appends them, and
    ``resolve_repeated_ids`` settles the records given again."""

    def __init__(self, conn: DriverConnection, now: datetime, *, deferred: bool = False) -> None:
        self.conn = conn
        self.now = now
        self.deferred = deferred
        self.imported = self.updated = self.unchanged = 0
        # Of a deferred import, the companies of the records that rows given again replaced.
        self.replaced: CompanyCounts = {}
        # Of a deferred import, each batch's first rowid and its ids' checksums.
        self.appended: list[tuple[int, array[int]]] = []
        # Whether most of the last batch was new records.
        self.mostly_new = False
        if conn.sqlite is not None:
            # The email and LinkedIn indexes are written at random: a roomy cache for them.
            conn.sqlite.execute("PRAGMA cache_size=-131072")
            changed = (
                "(" + ", ".join(f"{TABLE}.{c}" for c in _VALUES) + ") IS NOT ("
                + ", ".join(f"excluded.{c}" for c in _VALUES) + ")"
            )  # fmt: skip
            # The time is a literal of our own making: nothing to bind for it on every row.
            insert = (
                f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}, updated_at) "
                f"VALUES ({', '.join('?' for _ in COLUMNS)}, '{_sqlite_timestamp(now)}') "
            )
            # A changed record's columns but the indexed keys: SQLite rewrites an index entry
            # whenever its column is set, even to the same value, which made every change
            # cost three index updates. The keys are set after, where they differ, on the
            # rows a trigger notes (the trigger is this connection's own).
            indexed = lookup_keys()
            plain = [c for c in (*_VALUES, "updated_at") if c not in indexed]
            self.upsert = (
                f"{insert} ON CONFLICT (id) DO UPDATE SET "
                + ", ".join(f"{c} = excluded.{c}" for c in plain)
                + f" WHERE {changed}"
            )
            keys, marks = ", ".join(indexed), ", ".join("?" for _ in indexed)
            self.set_keys = (
                f"UPDATE {TABLE} SET ({keys}) = ({marks}) "
                f"WHERE id = ? AND ({keys}) IS NOT ({marks})"
            )
            self.keys_of = itemgetter(*(COLUMNS.index(key) for key in indexed))
            self.append = insert
            if not deferred:
                conn.sqlite.execute("CREATE TEMP TABLE IF NOT EXISTS directory_changed (row)")
                conn.sqlite.execute(
                    "CREATE TEMP TRIGGER IF NOT EXISTS directory_changed AFTER UPDATE OF "
                    f"{', '.join(plain)} ON main.{TABLE} "
                    "BEGIN INSERT INTO directory_changed VALUES (new.rowid); END"
                )
        else:
            assert conn.postgres is not None
            columns = ", ".join(f"{c} {'json' if c == 'phones' else 'text'}" for c in COLUMNS)
            conn.postgres.execute(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS directory_import ({columns}) "
                "ON COMMIT DELETE ROWS"
            )
            updates = ", ".join(f"{c} = excluded.{c}" for c in (*_VALUES, "updated_at"))
            # json has no equality: compare the text, which is what was written.
            mine = ", ".join(f"{TABLE}.{c}" + ("::text" if c == "phones" else "") for c in _VALUES)
            theirs = ", ".join(
                f"excluded.{c}" + ("::text" if c == "phones" else "") for c in _VALUES
            )
            self.upsert = (
                f"WITH written AS (INSERT INTO {TABLE} ({', '.join(COLUMNS)}, updated_at) "
                f"SELECT {', '.join(COLUMNS)}, %s FROM directory_import ORDER BY id "
                f"ON CONFLICT (id) DO UPDATE SET {updates} "
                f"WHERE ({mine}) IS DISTINCT FROM ({theirs}) RETURNING (xmax = 0) AS added) "
                "SELECT count(*) FILTER (WHERE added), count(*) FILTER (WHERE NOT added) "
                "FROM written"
            )

    def write(self, rows: list[Row]) -> None:
        if self.conn.sqlite is not None:
            lite = self.conn.sqlite
            if self.mostly_new:
                # New records go into the email index in its order (300 000 new people into
                # a directory of a million: 15.8-16.0 s against 16.5-16.8). Known ones are
                # read, and written when changed, where they are stored, in file order (a
                # million again: 17.6-18.3 s against 19.3-19.7 in email order).
                rows.sort(key=_email_order)
            with sqlite_transaction(lite):
                # A new row takes a rowid above the largest (we hold the write lock), while
                # an updated one keeps its own: the rows above the old largest are the new.
                (top,) = lite.execute(f"SELECT coalesce(max(rowid), 0) FROM {TABLE}").fetchone()
                if self.deferred:
                    self._append(lite, rows, top)
                    added, updated = len(rows), 0
                else:
                    changed = lite.executemany(self.upsert, rows).rowcount
                    (added,) = lite.execute(
                        f"SELECT count(*) FROM {TABLE} WHERE rowid > ?", (top,)
                    ).fetchone()
                    updated = changed - added
                    if updated:
                        self._set_keys(lite, rows)
        else:
            assert self.conn.postgres is not None
            pg = self.conn.postgres
            with pg.transaction(), pg.cursor() as cursor:
                copy_sql = f"COPY directory_import ({', '.join(COLUMNS)}) FROM STDIN"
                with cursor.copy(copy_sql) as copy:
                    for row in rows:
                        copy.write_row(row)
                cursor.execute(self.upsert, (self.now,))
                found = cursor.fetchone()
                assert found is not None
                added, updated = int(found[0]), int(found[1])
        self.imported += added
        self.updated += updated
        self.unchanged += len(rows) - added - updated
        self.mostly_new = not self.deferred and 2 * added > len(rows)

    def _set_keys(self, lite: sqlite3.Connection, rows: list[Row]) -> None:
        """Sets the indexed keys of the records the upsert changed, where they differ."""
        changed = lite.execute(
            f"SELECT id FROM {TABLE} WHERE rowid IN (SELECT row FROM directory_changed)"
        ).fetchall()
        lite.execute("DELETE FROM directory_changed")
        by_id = {row[0]: row for row in rows}
        params = []
        for (record_id,) in changed:
            keys = self.keys_of(by_id[record_id])
            params.append((*keys, record_id, *keys))
        lite.executemany(self.set_keys, params)

    def _append(self, lite: sqlite3.Connection, rows: list[Row], top: int) -> None:
        """Appends rows to a directory without indexes: they take the rowids after ``top``,
        in order (this connection holds the write lock)."""
        lite.executemany(self.append, rows)
        # A row's id is never None.
        checksums = [crc32(row[0].encode()) for row in rows]  # type: ignore[union-attr]
        self.appended.append((top + 1, array("I", checksums)))


_EMAIL_KEY_AT = COLUMNS.index("email_key")


def _email_order(row: Row) -> str:
    return row[_EMAIL_KEY_AT] or ""


ID_INDEX = "ux_directory_people_id"


def _table() -> Table:
    """``directory_people`` as the model declares it."""
    from dialscore.models import DirectoryPerson

    table = DirectoryPerson.__table__
    assert isinstance(table, Table)
    return table


def _indexes() -> list[tuple[str, str]]:
    """(name, ``CREATE INDEX IF NOT EXISTS``) of each of ``directory_people``'s indexes (the
    ids' unique one and the lookup ones), as the model declares them, for SQLite."""
    from sqlalchemy.dialects import sqlite
    from sqlalchemy.schema import CreateIndex

    dialect = sqlite.dialect()
    return [
        (str(index.name), str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
        for index in sorted(_table().indexes, key=lambda index: str(index.name))
    ]


@cache
def lookup_keys() -> tuple[str, ...]:
    """The columns the lookup indexes hold, in the table's order of them (COLUMNS)."""
    indexed = {
        column.name for index in _table().indexes if not index.unique for column in index.columns
    }
    return tuple(name for name in COLUMNS if name in indexed)


# Of the rows of each id, all but the last one, by rowid.
_EARLIER_ROWS = (
    f"SELECT rowid FROM (SELECT rowid, row_number() OVER (PARTITION BY id ORDER BY rowid DESC) "
    f"AS later FROM {TABLE}) AS versions WHERE later > 1"
)


def _create_index(lite: sqlite3.Connection, name: str, create: str) -> None:
    """Creates an index; the ids' unique one after removing, of the rows an import that
    ended before settling them left with one id, all but the last."""
    if name != ID_INDEX:
        lite.execute(create)
        return
    try:
        lite.execute(create)
    except sqlite3.IntegrityError:
        lite.execute(f"DELETE FROM {TABLE} WHERE rowid IN ({_EARLIER_ROWS})")
        lite.execute(create)


@contextmanager
def _indexes_deferred(conn: DriverConnection) -> Iterator[bool]:
    """On SQLite, drops the indexes of an empty directory and builds them when the import
    ends, however it ends: built once after the rows, they cost 3-4 µs a row, kept up to
    date row by row 5-7 (the ids' one more: its keys come at random). Builds any an earlier
    import stopped before building. Yields whether it dropped them."""
    lite = conn.sqlite
    if lite is None:
        yield False
        return
    with sqlite_transaction(lite):
        (empty,) = lite.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {TABLE})").fetchone()
        for name, create in _indexes():
            if empty:
                lite.execute(f'DROP INDEX IF EXISTS "{name}"')
            else:
                _create_index(lite, name, create)
    try:
        yield bool(empty)
    finally:
        if empty:
            # Sorted in runs of a few MiB, by as many threads as there are cores (up to
            # four): on two cores, a million rows' indexes took 4.0-4.5 s against 6.4-7.7
            # in one thread with a large cache.
            lite.execute(f"PRAGMA threads = {min(4, os.cpu_count() or 1)}")
            lite.execute("PRAGMA cache_size = -4096")
            with sqlite_transaction(lite):
                for name, create in _indexes():
                    _create_index(lite, name, create)


class _RepeatedIds:
    """The ids an import into an empty directory appended, by their checksums, as its
    batches are written: which rows may give a record again."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, array[int]]] = []
        self.seen: set[int] = set()
        self.repeated: set[int] = set()

    def add(self, batches: list[tuple[int, array[int]]]) -> None:
        """Adds batches of (first rowid, ids' checksums)."""
        for first, checksums in batches:
            self.batches.append((first, checksums))
            fresh = set(checksums)
            if len(fresh) < len(checksums):
                self.repeated.update(c for c, rows in Counter(checksums).items() if rows > 1)
            self.repeated |= fresh & self.seen
            self.seen |= fresh

    @property
    def rows(self) -> int:
        """How many rows were appended."""
        return sum(len(checksums) for _, checksums in self.batches)

    def rowids(self) -> list[int]:
        """The rowids of the rows whose ids' checksums came more than once."""
        if not self.repeated:
            return []
        repeated = self.repeated
        return [
            first + at
            for first, checksums in self.batches
            for at, checksum in enumerate(checksums)
            if checksum in repeated
        ]


def resolve_repeated_ids(lite: sqlite3.Connection, writer: _Writer, rowids: list[int]) -> None:
    """Of the records an import into an empty directory appended more than once (a record
    given again later in the file), keeps the last row, counts each later one as an update
    of the one before it (unchanged when the same), and notes the companies of the rows it
    removes. ``rowids``: the rows whose ids may have come more than once."""
    if not rowids:
        return
    earlier: list[int] = []
    with sqlite_transaction(lite):
        found = lite.execute(
            f"SELECT rowid, id, {', '.join(_VALUES)} FROM {TABLE} "
            "WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY id, rowid",
            (json.dumps(rowids),),
        ).fetchall()
        for _, versions in groupby(found, key=itemgetter(1)):
            for before, after in pairwise(versions):
                earlier.append(before[0])
                writer.imported -= 1
                if before[2:] == after[2:]:
                    writer.unchanged += 1
                else:
                    writer.updated += 1
                company = tuple(before[-3:])
                writer.replaced[company] = writer.replaced.get(company, 0) + 1
        lite.execute(
            f"DELETE FROM {TABLE} WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(earlier),),
        )


def _make_company_tables(
    conn: DriverConnection, parsed: Future[CompanyTableRows] | None, appended: int
) -> None:
    """Makes the company tables: from the rows worked out from the companies counted as the
    file was parsed (``parsed``) when the directory holds those rows alone (an import into
    an empty one, which appended ``appended`` rows and no other import wrote to), else by
    counting the table."""
    if conn.sqlite is not None:
        lite = conn.sqlite
        with sqlite_transaction(lite):
            # Rowids number the rows appended to a table that was empty from 1; those of
            # records given again are gone, but never the last row.
            (top,) = lite.execute(f"SELECT coalesce(max(rowid), 0) FROM {TABLE}").fetchone()
            if parsed is None or top != appended:
                for statement in COMPANY_TABLES_SQL:
                    lite.execute(statement)
                return
            domains, pages = parsed.result()
            lite.execute(COMPANY_DOMAINS_SQL[0])
            lite.executemany(
                "INSERT INTO directory_company_domains (name_key, domain, people) VALUES (?, ?, ?)",
                domains,
            )
            lite.execute(COMPANY_PAGES_SQL[0])
            lite.executemany(
                "INSERT INTO directory_company_pages (page, name_key, domain, people) "
                "VALUES (?, ?, ?, ?)",
                pages,
            )
    else:
        assert conn.postgres is not None
        with conn.postgres.transaction():
            for statement in COMPANY_TABLES_SQL:
                conn.postgres.execute(statement)


def _batches(
    blocks: Iterator[tuple[list[Row], int]], batch_rows: int, first: int | None = None
) -> Iterator[tuple[list[Row], int]]:
    """The parsed blocks' rows (each with the file position after its block) in batches of
    at most ``batch_rows`` with distinct ids, in file order: an id given again starts a new
    batch, so that each row counts once, in order. The first batches are smaller (``first``
    rows, by default an eighth), so that writing starts early."""
    batch: list[Row] = []
    ids: set[str | None] = set()
    position = 0
    limit = max(1, batch_rows // 8 if first is None else first)
    for rows, position in blocks:
        new = {row[0] for row in rows}
        if len(new) == len(rows) <= limit - len(batch) and ids.isdisjoint(new):
            # Most blocks: ids new to the batch, which has room for them all.
            batch += rows
            ids |= new
            continue
        for row in rows:
            if len(batch) >= limit or row[0] in ids:
                yield batch, position
                batch, ids = [], set()
                limit = min(batch_rows, 2 * limit)
            batch.append(row)
            ids.add(row[0])
    if batch:
        yield batch, position


def _distinct(rows: list[Row], batch_rows: int) -> Iterator[list[Row]]:
    """One block's rows in batches of distinct ids (an id given again starts the next)."""
    for batch, _ in _batches(iter([(rows, 0)]), batch_rows, batch_rows):
        yield batch


# -- writing in the workers (SQLite) -------------------------------------------------------------

# A worker parses and writes a chunk of about this many blocks: a transaction of some 40 000
# rows of the bench's file, which holds the write lock for about a quarter of a second.
CHUNK_BLOCKS = 8
_NO_STOP = 1 << 62


class _Turns:
    """Whose turn it is to write: the workers write their chunks in file order, each once the
    one before it is written, so that a record given again ends with its later row. From the
    chunk ``stop`` names on, none is written."""

    def __init__(self, context: multiprocessing.context.BaseContext) -> None:
        self.condition = context.Condition()
        # The next chunk to write, and the first not to write.
        self.state = context.Array("q", [0, _NO_STOP], lock=False)

    def wait(self, chunk: int) -> bool:
        """Waits until ``chunk`` may be written; False when it must not be (a chunk before it
        could not be written here, or the importing process gave up or ended)."""
        parent = multiprocessing.parent_process()
        with self.condition:
            while self.state[0] != chunk and chunk < self.state[1]:
                if not self.condition.wait(1.0) and parent is not None and not parent.is_alive():
                    return False
            return bool(chunk < self.state[1])

    def written(self, chunk: int) -> None:
        with self.condition:
            self.state[0] = chunk + 1
            self.condition.notify_all()

    def stop(self, chunk: int) -> None:
        # Waiters look again every second: a lock that a killed worker held must not keep
        # the importing process from failing.
        locked = self.condition.acquire(timeout=1.0)
        try:
            self.state[1] = min(self.state[1], chunk)
            if locked:
                self.condition.notify_all()
        finally:
            if locked:
                self.condition.release()


@dataclass
class _ChunkWork:
    """What every chunk of one import shares, given to each worker when it starts."""

    url: str
    path: Path
    kind: str
    now: datetime
    deferred: bool
    batch_rows: int
    turns: _Turns


@dataclass
class _ChunkWritten:
    """A chunk's rows parsed, and written unless ``written`` is False: then the importing
    process goes on from the chunk's start itself."""

    counts: DirectoryCounts
    companies: CompanyCounts
    written: bool
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    appended: list[tuple[int, array[int]]] = field(default_factory=list)


# A worker's import and its writer (its own connection), from its start to its end.
_chunk_work: tuple[_ChunkWork, _Writer] | None = None


def _start_chunk_worker(work: _ChunkWork) -> None:
    global _chunk_work
    use_large_memos()
    stack = ExitStack()
    conn = stack.enter_context(connect(work.url))
    multiprocessing.util.Finalize(stack, stack.close, exitpriority=10)
    _chunk_work = work, _Writer(conn, work.now, deferred=work.deferred)


def write_chunk(
    chunk: int, start: int, length: int, first_line: int, final: bool, layout: CsvLayout | None
) -> _ChunkWritten:
    """In a worker: parses a chunk of the file and writes its rows when its turn comes."""
    assert _chunk_work is not None
    work, writer = _chunk_work
    try:
        with work.path.open("rb") as handle:
            handle.seek(start)
            data = handle.read(length)
        result = parse_block(
            work.kind, layout, first_line, data, final, count_companies=work.deferred
        )
    except BaseException:
        work.turns.stop(chunk)
        raise
    if not work.turns.wait(chunk) or not result.clean:
        # Cut through a quoted field (or a chunk before it was): this chunk and the later
        # ones are the importing process's to parse, joined as they must be.
        work.turns.stop(chunk)
        return _ChunkWritten(result.counts, result.companies, written=False)
    writer.imported = writer.updated = writer.unchanged = 0
    writer.appended = []
    try:
        for batch in _distinct(result.rows, work.batch_rows):
            writer.write(batch)
    except BaseException:
        work.turns.stop(chunk)
        raise
    work.turns.written(chunk)
    return _ChunkWritten(
        result.counts,
        result.companies,
        written=True,
        imported=writer.imported,
        updated=writer.updated,
        unchanged=writer.unchanged,
        appended=writer.appended,
    )


@dataclass
class _Tally:
    """What an import has parsed and written so far."""

    counts: DirectoryCounts
    writer: _Writer
    # The companies of an import into an empty directory, as its rows are parsed; None for
    # another import, or past MAX_COMPANY_COUNTS of them.
    companies: CompanyCounts | None
    # The ids an import into an empty directory appended.
    ids: _RepeatedIds = field(default_factory=_RepeatedIds)

    def parsed(self, counts: DirectoryCounts, companies: CompanyCounts) -> None:
        self.counts.add(counts)
        if self.companies is not None:
            for key, people in companies.items():
                self.companies[key] = self.companies.get(key, 0) + people
            if len(self.companies) > MAX_COMPANY_COUNTS:
                self.companies = None

    def written(self, chunk: _ChunkWritten) -> None:
        """Adds a chunk a worker parsed and wrote."""
        self.parsed(chunk.counts, chunk.companies)
        writer = self.writer
        writer.imported += chunk.imported
        writer.updated += chunk.updated
        writer.unchanged += chunk.unchanged
        self.ids.add(chunk.appended)

    def write(self, rows: list[Row]) -> None:
        """Writes a batch of rows with distinct ids from this process."""
        self.writer.write(rows)
        self.ids.add(self.writer.appended)
        self.writer.appended.clear()


def _on_disk(lite: sqlite3.Connection) -> bool:
    """Whether the database is a file that other processes can open too."""
    return bool(lite.execute("PRAGMA database_list").fetchone()[2])


def _write_here(
    results: Iterator[tuple[BlockResult, int]],
    tally: _Tally,
    batch_rows: int,
    progress: Progress,
    size: int,
) -> None:
    """Writes parsed blocks from this process, in batches."""

    def parsed() -> Iterator[tuple[list[Row], int]]:
        for result, position in results:
            tally.parsed(result.counts, result.companies)
            yield result.unpacked(), position

    # Parsed results are gathered into batches on a helper thread while this one writes (the
    # driver lets go of the interpreter while the database works).
    with prefetching(_batches(parsed(), batch_rows)) as ready:
        for rows, position in ready:
            tally.write(rows)
            progress("reading", position, size)


def _write_in_workers(
    work: _ChunkWork,
    context: multiprocessing.context.BaseContext,
    workers: int,
    reader: _LineReader,
    block_bytes: int,
    tally: _Tally,
    progress: Progress,
    size: int,
) -> _BlockParser:
    """Has ``workers`` processes parse the file in chunks and write them, each its own in
    file order (SQLite); the first blocks, until the header is read and a worker has started,
    are parsed and written here. Returns the parser of what is left for this process: from a
    chunk cut through a quoted field, the rest of the file; else nothing.

    Parsed in the workers and written here, every row was packed, sent and unpacked, and its
    writing ran beside the parsing on the same two cores: a million rows took 37-38
    CPU-seconds, against 33-35 written by the workers."""
    # Small blocks here: the header is all this process needs.
    parser = _BlockParser(reader, max(1, block_bytes // 16), count_companies=work.deferred)
    with ProcessPoolExecutor(
        workers, context, initializer=_start_chunk_worker, initargs=(work,)
    ) as pool:
        try:
            # Every worker starts now (a pool starts one when it is given a task and none is
            # idle), so that all are ready for the first chunks.
            ready = [pool.submit(_ready) for _ in range(workers)]
            here = parser.results(0)
            while not (ready[0].done() and parser.knows_layout):
                found = next(here, None)
                if found is None:
                    return parser
                result, position = found
                tally.parsed(result.counts, result.companies)
                for batch in _distinct(result.rows, work.batch_rows):
                    tally.write(batch)
                progress("reading", position, size)
            pending: deque[tuple[_Block, Future[_ChunkWritten]]] = deque()
            chunks = 0
            chunk_bytes = block_bytes * CHUNK_BLOCKS
            while True:
                while len(pending) < 2 * workers:
                    # Smaller chunks towards the end, so that the workers finish together (a
                    # quarter at least: each transaction rewrites pages all over the id index).
                    left = (size - reader.position) // (2 * workers)
                    block = reader.read(max(chunk_bytes // 4, min(chunk_bytes, left)))
                    if block is None:
                        break
                    args = (block.start, len(block.data), block.first_line, block.final)
                    pending.append((block, pool.submit(write_chunk, chunks, *args, parser.layout)))
                    chunks += 1
                if not pending:
                    return _BlockParser(reader, block_bytes, parser.layout)  # nothing left
                block, future = pending.popleft()
                written = future.result()
                if not written.written:
                    for _, later in pending:
                        later.cancel()
                    rest = _LineReader(reader.handle, reader.kind, block.start, block.first_line)
                    return _BlockParser(
                        rest, block_bytes, parser.layout, count_companies=work.deferred
                    )
                tally.written(written)
                progress("reading", block.end, size)
        except BaseException:
            work.turns.stop(0)
            raise


def import_directory(
    url: str,
    path: Path,
    *,
    progress: Progress = no_progress,
    batch_rows: int = BATCH_ROWS,
    block_bytes: int = BLOCK_BYTES,
    workers: int | None = None,
) -> DirectoryReport:
    """Imports a directory file (CSV or JSON Lines, see the module's documentation) into
    ``directory_people``; ``progress`` hears ("reading", bytes read, file size). ``workers``:
    processes that parse, and on SQLite write what they parse (0: none, this one parses;
    default: by the file's size and CPUs)."""
    started = time.perf_counter()
    kind = file_format(path)
    if kind == "jsonl" and _first_character(path) == b"[":
        raise FileFormatError(
            "a JSON array: a directory file in JSON is JSON Lines, one object per line"
        )
    counts = DirectoryCounts()
    size = max(1, path.stat().st_size)
    workers = _pool_size(size, workers)
    with (
        connect(url) as conn,
        path.open("rb") as handle,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="company-tables") as helper,
    ):
        tables: Future[CompanyTableRows] | None = None
        with _indexes_deferred(conn) as deferred:
            now = datetime.now(UTC)
            tally = _Tally(counts, _Writer(conn, now, deferred=deferred), {} if deferred else None)
            reader = _LineReader(handle, kind)
            if conn.sqlite is not None and workers and _on_disk(conn.sqlite):
                context = _context()
                work = _ChunkWork(url, path, kind, now, deferred, batch_rows, _Turns(context))
                parser = _write_in_workers(
                    work, context, workers, reader, block_bytes, tally, progress, size
                )
                workers = 0  # what is left is parsed here
            else:
                parser = _BlockParser(reader, block_bytes, count_companies=deferred)
            _write_here(parser.results(workers), tally, batch_rows, progress, size)
            if kind == "csv" and parser.layout is None:
                csv_layout([])  # no header at all: raises, saying what the file needs
            if deferred:
                assert conn.sqlite is not None
                resolve_repeated_ids(conn.sqlite, tally.writer, tally.ids.rowids())
            if tally.companies is not None:
                for key, people in tally.writer.replaced.items():
                    tally.companies[key] -= people
                # Their rows are worked out on the helper thread while the indexes are built
                # (the database lets go of the interpreter meanwhile), and written after.
                tables = helper.submit(company_table_rows, tally.companies)
        _make_company_tables(conn, tables, tally.ids.rows)
        if conn.postgres is not None:
            analyze(conn.postgres, TABLE)
        progress("reading", size, size)
    return DirectoryReport(
        counts=counts,
        format=kind,
        imported=tally.writer.imported,
        updated=tally.writer.updated,
        unchanged=tally.writer.unchanged,
        seconds=time.perf_counter() - started,
    )
