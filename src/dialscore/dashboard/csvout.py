"""A job's results as CSV: the contact's own columns first, then its phones with their
statuses, then its best phone and lead status. Written batch by batch, never whole."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dialscore.jobs.repository import ResultRow
from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS
from dialscore.scoring.numbers import PHONE_SLOTS

# The contact input fields of an API job, as the API returns them: the phone slots with their
# types and countries are not repeated, since the phone columns carry them from ``phones``.
_PHONE_INPUTS = frozenset(
    [*PHONE_SLOTS] + [f"{slot}{suffix}" for slot in PHONE_SLOTS for suffix in ("Type", "Country")]
)
API_FIELDS: tuple[str, ...] = tuple(f for f in CONTACT_INPUT_FIELDS if f not in _PHONE_INPUTS)
PHONE_PARTS = ("", "Status", "Type", "Country")
PHONE_KEYS = ("number", "status", "type", "country")
TAIL = ("bestPhone", "bestPhoneStatus", "leadStatus")
# Opened by a spreadsheet, a cell that starts with one of these is read as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# ... but a sign followed by nothing but digits and the punctuation of a phone number or a
# number is arithmetic at worst: no function, no reference, no link can be written with it.
_PLAIN_NUMBER = re.compile(r"[+-][0-9 ().\-/]*")


def phone_columns(groups: int) -> list[str]:
    """``phone, phoneStatus, phoneType, phoneCountry, phone2, phone2Status …``."""
    names: list[str] = []
    for index in range(1, groups + 1):
        slot = "phone" if index == 1 else f"phone{index}"
        names.extend(f"{slot}{part}" for part in PHONE_PARTS)
    return names


def safe_cell(value: Any) -> str:
    """The cell's text, defused when a spreadsheet would run it as a formula: a leading ``'``
    makes it text. Numbers such as ``+14155550100`` or ``-12`` are left as they are."""
    if value is None:
        return ""
    cell = str(value)
    if cell.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


@dataclass(frozen=True)
class Layout:
    """The columns of one job's results: ``upload_columns`` for a job started from an
    uploaded file (each contact's row as it was), else the API's contact input fields;
    ``groups`` phone column groups, the most phones a contact of the job has."""

    upload_columns: Sequence[str] | None
    groups: int

    @property
    def header(self) -> list[str]:
        head = list(self.upload_columns) if self.upload_columns is not None else list(API_FIELDS)
        return [*head, *phone_columns(self.groups), *TAIL]

    def row(self, contact: ResultRow) -> list[str]:
        if self.upload_columns is not None:
            width = len(self.upload_columns)
            cells = list(contact.source_row or ())[:width]
            head = [safe_cell(c) for c in cells] + [""] * (width - len(cells))
        else:
            head = [safe_cell(contact.fields.get(name)) for name in API_FIELDS]
        phones: list[str] = []
        for index in range(self.groups):
            entry = contact.phones[index] if index < len(contact.phones) else {}
            phones.extend(safe_cell(entry.get(key)) for key in PHONE_KEYS)
        best = contact.best_phone or {}
        tail = [
            safe_cell(best.get("number")),
            safe_cell(best.get("status")),
            safe_cell(contact.lead_status),
        ]
        return [*head, *phones, *tail]


def _lines(rows: Iterable[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue().encode("utf-8")


async def stream(layout: Layout, batches: AsyncIterable[list[ResultRow]]) -> AsyncIterator[bytes]:
    """The CSV in chunks: a byte order mark (spreadsheets then read UTF-8 names right) and
    the header at once, then one chunk per batch of contacts."""
    yield b"\xef\xbb\xbf" + _lines([layout.header])
    async for batch in batches:
        yield _lines(layout.row(contact) for contact in batch)
