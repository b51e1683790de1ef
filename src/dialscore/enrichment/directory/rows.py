"""A directory record's row: its values checked against the table's widths, its phones in
E.164, its identity and lookup keys; what became of a file's lines and phones; rows in
batches of distinct records, and what writes them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from dialscore.enrichment.directory.columns import (
    COMPANY,
    COMPANY_PAGE,
    EMAIL,
    FIELDS,
    FIRST,
    MAX_IGNORED,
    NARROWEST,
    TITLE,
    WEBSITE,
    WIDTHS,
)
from dialscore.identity.companies import company_domain, company_linkedin_slug, company_name_key
from dialscore.identity.keys import record_key_values
from dialscore.identity.names import name_tokens
from dialscore.kit.linefiles import MAX_EXAMPLES, LineCounts, Rejection, quote
from dialscore.phones import e164_or_reason, normalise_type

# A table row: values in COLUMNS order.
Row = tuple[str | None, ...]

MAX_ID = 64
_NO_IDENTITY = (
    "cannot be matched: needs an email, a LinkedIn profile URL, or a first and last name "
    "with a company (name, website or LinkedIn page)"
)


class RowError(ValueError):
    """Why a record is invalid."""


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


# -- phones -----------------------------------------------------------------------------------


# What a directory writes where no number is known ("n/a", "000-000-0000") repeats, and so do
# the numbers of a company's main line.
@lru_cache(maxsize=4096)
def phone_e164(text: str) -> tuple[str | None, str]:
    """The E.164 form of a directory phone (a number without ``+`` is read as a US number),
    else None and why: not a number, not a valid one, or one with an extension."""
    return e164_or_reason(text)


@lru_cache(maxsize=1024)
def phone_type(value: str | None) -> str | None:
    """A phone's type as the table holds it; None when none is given."""
    if value is None or not value.strip():
        return None
    return normalise_type(value)


def phones_cell(text: str) -> list[tuple[str, str | None]]:
    """``number:type;number:type`` (the type optional) as (number, type) pairs."""
    found: list[tuple[str, str | None]] = []
    for part in text.split(";"):
        number, colon, kind = part.rpartition(":")
        if not colon:
            number, kind = kind, ""
        if number.strip():
            found.append((number.strip(), phone_type(kind)))
    return found


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


# -- identity and keys ------------------------------------------------------------------------


def _digest(kind: str, key: str) -> str:
    return f"{kind}:" + hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def _company_evidence(values: Sequence[str | None]) -> str | None:
    name = company_name_key(values[COMPANY])
    if name:
        return "name:" + name
    for value in (values[WEBSITE], values[EMAIL]):
        domain = company_domain(value)
        if domain:
            return "domain:" + domain
    page = company_linkedin_slug(values[COMPANY_PAGE])
    return "page:" + page if page else None


def build_row(
    record_id: str | None,
    values: Sequence[str | None],
    phones: Sequence[tuple[str, str | None]],
    line: int,
    counts: DirectoryCounts,
) -> Row:
    """The table row of one record (``values`` in ``FIELDS`` order, stripped, empty as
    None); raises RowError when the row is invalid."""
    if record_id is not None and len(record_id) > MAX_ID:
        raise RowError(f"id is longer than {MAX_ID} characters")
    if max(map(len, filter(None, values)), default=0) > NARROWEST:
        for name, value, width in zip(FIELDS, values, WIDTHS, strict=True):
            if value is not None and len(value) > width:
                raise RowError(f"{name} is longer than {width} characters")
    keys = record_key_values(*values[:TITLE])
    email, linkedin, last_name = keys[:3]
    if record_id is None:
        if linkedin is not None:
            record_id = _digest("li", linkedin)
        elif email is not None:
            record_id = _digest("em", email)
    if linkedin is None and email is None:
        first = "".join(name_tokens(values[FIRST]))
        company = _company_evidence(values) if first and last_name else None
        if company is None:
            raise RowError(_NO_IDENTITY)
        record_id = record_id or _digest("nc", f"{first}|{last_name}|{company}")
    # The keys come in the table's order of them (COLUMNS).
    return (record_id, *values, _phones_json(phones, line, counts), *keys)


# -- batches ----------------------------------------------------------------------------------


class Writer(Protocol):
    """Upserts batches of rows with distinct ids, counting new, changed and unchanged ones."""

    imported: int
    updated: int
    unchanged: int

    def write(self, rows: list[Row]) -> None: ...


def batches(
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


def distinct(rows: list[Row], batch_rows: int) -> Iterator[list[Row]]:
    """One block's rows in batches of distinct ids (an id given again starts the next)."""
    for batch, _ in batches(iter([(rows, 0)]), batch_rows, batch_rows):
        yield batch
