"""Reading a block of a directory file's whole lines (CSV or JSON Lines) into table rows,
counting what became of each line."""

from __future__ import annotations

import csv
import json
import marshal
from dataclasses import dataclass, field
from typing import Any

from dialscore.enrichment.directory.columns import (
    FIELDS,
    KNOWN_KEYS,
    MAX_IGNORED,
    PHONE_KEY,
    PHONE_SLOT,
    TYPED_PHONES,
    CsvLayout,
    csv_layout,
    field_key,
)
from dialscore.enrichment.directory.companies import CompanyCounts, tally_companies
from dialscore.enrichment.directory.rows import (
    DirectoryCounts,
    Row,
    RowError,
    build_row,
    phone_type,
    phones_cell,
)
from dialscore.kit.linefiles import FileFormatError, column_key

# A record appended to a CSV block: read back as a record of its own, it shows that the block
# ended outside quotes (else it was swallowed by a quoted field the block cut through).
_SENTINEL = "\ue000dialscore-block-end\ue000"


@dataclass
class BlockResult:
    """A parsed block: its rows, what became of its lines, and the layout its CSV header gave."""

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
        tally_companies(result.rows, result.companies)
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
                    phones.append((number, fixed or phone_type(cells[type_at])))
            listed = cells[layout.phones_cell]
            if listed:
                phones += phones_cell(listed)
            try:
                row = build_row(cells[layout.id_at].strip() or None, values, phones, line, counts)
            except RowError as exc:
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
        raise RowError(f"{name} must be a string")
    return str(value).strip() or None


def _json_phones(record: dict[str, Any], by_key: dict[str, str]) -> list[tuple[str, str | None]]:
    """A JSON Lines record's phones: its ``phones`` list, then its phone keys."""
    phones: list[tuple[str, str | None]] = []
    listed = record.get(by_key["phones"]) if "phones" in by_key else None
    if listed is not None:
        if not isinstance(listed, list):
            raise RowError("phones must be a list of {number, type} objects")
        for entry in listed:
            if isinstance(entry, str | int) and not isinstance(entry, bool):
                number, kind = str(entry), None
            elif isinstance(entry, dict):
                number = _json_text(entry, "number") or ""
                kind = phone_type(_json_text(entry, "type"))
            else:
                raise RowError("phones must be a list of {number, type} objects")
            if number.strip():
                phones.append((number.strip(), kind))
    for folded, key in by_key.items():
        if folded in TYPED_PHONES:
            typed = _json_text(record, key)
            if typed:
                phones.append((typed, TYPED_PHONES[folded]))
        elif PHONE_SLOT.fullmatch(folded):
            slotted = _json_text(record, key)
            if slotted:
                type_key = by_key.get(folded + "type")
                kind = None if type_key is None else _json_text(record, type_key)
                phones.append((slotted, phone_type(kind)))
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
                key = field_key(by_key, name)
                values.append(None if key is None else _json_text(record, key))
            id_key = field_key(by_key, "id")
            record_id = None if id_key is None else _json_text(record, id_key)
            row = build_row(record_id, values, _json_phones(record, by_key), line, counts)
        except RowError as exc:
            counts.reject(line, line_text, str(exc))
            continue
        for folded, key in by_key.items():
            if folded not in KNOWN_KEYS and not PHONE_KEY.fullmatch(folded):
                ignored.setdefault(key, None)
        counts.accepted += 1
        rows.append(row)
    counts.ignored_columns = tuple(ignored)[:MAX_IGNORED]
    return rows
