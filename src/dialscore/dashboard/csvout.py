"""A job's results as CSV: the contact's own columns first, then dialscore's, under names that
cannot be taken for the file's own. Written batch by batch, never whole.

Two layouts. ``results``: the file's columns as they came, the lead status, the best phone and
each phone with its status, type, country, reasons and call verdict as of the download (its
time zone, whether callable now, when next, its best hours). ``crm`` (a job from a file only), for
a re-import by ID: the file's phone columns hold the numbers as scored (E.164), numbers
enrichment found go into the row's empty phone columns, and each phone column has its status
and reasons beside it, named after it."""

from __future__ import annotations

import csv
import io
import re
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dialscore.dashboard.mapping import phone_columns
from dialscore.dashboard.words import words
from dialscore.jobs.repository import ResultRow
from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS, PHONE_INPUT_FIELDS
from dialscore.scoring.numbers import ENRICHED_TYPE

# The contact input fields of an API job, as the API returns them: the phone slots with their
# types and countries are not repeated, since the phone columns carry them from ``phones``.
API_FIELDS: tuple[str, ...] = tuple(f for f in CONTACT_INPUT_FIELDS if f not in PHONE_INPUT_FIELDS)
SUMMARY = ("lead_status", "best_phone", "best_phone_status", "rejected_reason")
PHONE_PARTS = (
    "phone",
    "phone_status",
    "phone_type",
    "phone_country",
    "phone_reasons",
    # Each phone's call verdict when the file is made (P177).
    "phone_time_zone",
    "phone_callable_now",
    "phone_next_callable_at",
    "phone_best_call_hours",
)
# Opened by a spreadsheet, a cell that starts with one of these is read as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# ... but a sign followed by nothing but digits and the punctuation of a phone number or a
# number, and perhaps an extension ("x254", "ext. 15"), is arithmetic at worst: no function
# and no link can be written with it.
_EXTENSION_TEXT = r"(?:x|ext\.?|extension|#)\s*\d{1,8}"
_PLAIN_NUMBER = re.compile(rf"[+-][0-9 ().\-/]*(?:{_EXTENSION_TEXT})?", re.IGNORECASE)
_EXTENSION = re.compile(rf"{_EXTENSION_TEXT}\s*$", re.IGNORECASE)
# A rejected row's cells, in the file's order: (row index, cells, reason).
Rejected = tuple[int, list[str], str]


def phone_column_names(groups: int) -> list[str]:
    """``dialscore Phone 1``, ``dialscore Phone 1 Status`` … for ``groups`` phones."""
    w = words()
    return [w.column(part, n=n) for n in range(1, groups + 1) for part in PHONE_PARTS]


def safe_cell(value: Any) -> str:
    """The cell's text, defused when a spreadsheet would run it as a formula: a leading ``'``
    makes it text. Numbers such as ``+14155550100`` or ``-12`` are left as they are."""
    if value is None:
        return ""
    cell = str(value)
    if cell.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def _reasons(entry: dict[str, Any]) -> str:
    return "; ".join(str(r) for r in entry.get("reasons") or ())


def _callable(entry: dict[str, Any]) -> str | None:
    now = entry.get("callableNow")
    return None if now is None else ("yes" if now else "no")


def _best_hours(entry: dict[str, Any]) -> str:
    """Best call hours as one cell: ``mon tue 17:00-19:00; sat 10:00-12:00``."""
    return "; ".join(
        f"{' '.join(hours['days'])} {hours['from']}-{hours['to']}"
        for hours in entry.get("bestCallHours") or ()
    )


def _as_scored(entry: dict[str, Any], cell: str) -> str:
    """What a phone column holds in the re-import layout: the scored number (E.164), or the
    cell as it was when it gives an extension, which E.164 cannot carry."""
    if _EXTENSION.search(cell):
        return cell
    return str(entry.get("number") or "") or cell


@dataclass(frozen=True)
class Layout:
    """The columns of one job's results: ``upload_columns`` for a job started from an
    uploaded file (each contact's row as it was) with the ``mapping`` it was started with,
    else the API's contact input fields; ``groups`` phone column groups, the most phones a
    contact of the job has; ``crm`` for the re-import layout."""

    upload_columns: Sequence[str] | None
    groups: int
    mapping: Sequence[str] | None = None
    crm: bool = False

    @property
    def _phones(self) -> list[tuple[str, int, str]]:
        return phone_columns(self.mapping or ())

    @property
    def header(self) -> list[str]:
        w = words()
        head = list(self.upload_columns) if self.upload_columns is not None else list(API_FIELDS)
        summary = [w.column(name) for name in SUMMARY]
        if self.crm and self.upload_columns is not None:
            beside = []
            for _, index, _ in self._phones:
                name = self.upload_columns[index]
                beside += [
                    w.column("column_status", column=name),
                    w.column("column_reasons", column=name),
                ]
            return [*head, *summary, *beside]
        return [*head, *summary, *phone_column_names(self.groups)]

    def _head(self, contact: ResultRow) -> list[str]:
        if self.upload_columns is None:
            return [safe_cell(contact.fields.get(name)) for name in API_FIELDS]
        width = len(self.upload_columns)
        cells = list(contact.source_row or ())[:width]
        return cells + [""] * (width - len(cells))

    def _summary(self, contact: ResultRow) -> list[Any]:
        best = contact.best_phone or {}
        return [
            contact.lead_status,
            best.get("number"),
            best.get("status"),
            contact.rejected_reason,
        ]

    def row(self, contact: ResultRow) -> list[str]:
        head = self._head(contact)
        if self.crm and self.upload_columns is not None:
            return self._crm_row(contact, head)
        phones: list[Any] = []
        for index in range(self.groups):
            entry = contact.phones[index] if index < len(contact.phones) else {}
            reasons = _reasons(entry) if entry else None
            parts = (entry.get("number"), entry.get("status"), entry.get("type"))
            phones.extend([*parts, entry.get("country"), reasons])
            verdict = (entry.get("timeZone"), _callable(entry), entry.get("nextCallableAt"))
            phones.extend([*verdict, _best_hours(entry) if entry else None])
        return [safe_cell(c) for c in [*head, *self._summary(contact), *phones]]

    def _crm_row(self, contact: ResultRow, head: list[str]) -> list[str]:
        """The row with its phone columns holding the scored numbers: its own numbers, in the
        columns they came from, then the numbers enrichment found in its empty ones."""
        columns = self._phones
        own = [e for e in contact.phones if not str(e.get("type") or "").startswith(ENRICHED_TYPE)]
        found = [e for e in contact.phones if str(e.get("type") or "").startswith(ENRICHED_TYPE)]
        filled: dict[int, dict[str, Any]] = {}
        entries = iter(own)
        for _, index, _ in columns:
            if head[index].strip():
                entry = next(entries, None)
                if entry is not None:
                    filled[index] = entry
                    head[index] = _as_scored(entry, head[index])
        types = list(contact.enriched_types or ())
        for position, entry in enumerate(found):
            kind = types[position] if position < len(types) else None
            empty = [(i, k) for _, i, k in columns if i not in filled and not head[i].strip()]
            target = next((i for i, k in empty if k == kind), None)
            if target is None and empty:
                target = empty[0][0]
            if target is not None:
                filled[target] = entry
                head[target] = str(entry.get("number") or "")
        beside: list[Any] = []
        for _, index, _ in columns:
            entry = filled.get(index)
            beside += [entry.get("status"), _reasons(entry)] if entry else [None, None]
        return [safe_cell(c) for c in [*head, *self._summary(contact), *beside]]

    def rejected_row(self, cells: list[str], reason: str) -> list[str]:
        """A row of the file the job left out: its cells as they were, and why."""
        width = len(self.upload_columns or ())
        head = list(cells[:width]) + [""] * (width - len(cells))
        blank = len(self.header) - width - len(SUMMARY)
        return [safe_cell(c) for c in [*head, None, None, None, reason, *[None] * blank]]


def _lines(rows: Iterable[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue().encode("utf-8")


def header_line(header: list[str]) -> bytes:
    """A CSV's first bytes: a byte order mark and its header."""
    return b"\xef\xbb\xbf" + _lines([header])


def rejected_lines(width: int, rows: Iterable[Rejected]) -> bytes:
    """Rows the job left out, as they were in the file (``width`` columns), and why."""
    return _lines(
        [safe_cell(c) for c in [*cells[:width], *[""] * (width - len(cells)), reason]]
        for _, cells, reason in rows
    )


async def stream(
    layout: Layout,
    batches: AsyncIterable[list[ResultRow]],
    rejected: AsyncIterable[list[Rejected]] | None = None,
) -> AsyncIterator[bytes]:
    """The CSV in chunks: a byte order mark (spreadsheets then read UTF-8 names right) and
    the header at once, then one chunk per batch of contacts. The rows the job left out
    (``rejected``, in the file's order) come at their place in the file: every row of a file
    is either a contact, in order, or one of them."""
    yield header_line(layout.header)
    pending: deque[Rejected] = deque()
    more = rejected.__aiter__() if rejected is not None else None
    row_index = 0

    async def fill() -> None:
        nonlocal more
        if not pending and more is not None:
            try:
                pending.extend(await more.__anext__())
            except StopAsyncIteration:
                more = None

    async for batch in batches:
        lines: list[list[str]] = []
        for contact in batch:
            await fill()
            while pending and pending[0][0] <= row_index:
                _, cells, reason = pending.popleft()
                lines.append(layout.rejected_row(cells, reason))
                row_index += 1
                await fill()
            lines.append(layout.row(contact))
            row_index += 1
        yield _lines(lines)
    await fill()
    while pending:
        lines = [layout.rejected_row(cells, reason) for _, cells, reason in pending]
        pending.clear()
        yield _lines(lines)
        await fill()
