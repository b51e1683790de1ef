"""What the column headers of CRM and contact-database exports mean, and which trailing lines
of a report export are its footer: ``data/crm_exports.toml``, read and checked once."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from dialscore.jobs.schemas import CONTACT_INPUT_FIELDS
from dialscore.phones import PHONE_TYPES, analyse
from dialscore.scoring.numbers import PHONE_SLOTS

DATA_FILE = Path(__file__).parent / "data" / "crm_exports.toml"
GENERIC = "generic"
# The meaning of a phone column: a free slot of phone … phone5, chosen by the guess.
PHONE = "phone"
# The meaning of a column known to be no contact field (a fax number).
EXTRA = "extra"


class ExportDataError(ValueError):
    """What is wrong in the export data file, naming its place there."""


def header_key(name: str) -> str:
    """A header as it is matched: lower case letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", name.casefold())


@dataclass(frozen=True, slots=True)
class Meaning:
    """What a column holds: a contact input field, ``PHONE`` with its line type when the
    header tells one, or ``EXTRA``; a fallback takes its field only when no other column of
    the file holds it."""

    field: str
    phone_type: str | None = None
    fallback: bool = False

    @property
    def is_phone(self) -> bool:
        return self.field == PHONE

    def __str__(self) -> str:
        told = f"{self.field}:{self.phone_type}" if self.phone_type else self.field
        return f"{told} (fallback)" if self.fallback else told


@dataclass(frozen=True)
class Export:
    """One export's columns, by ``header_key``, and where their names come from."""

    key: str
    name: str
    source: str
    columns: Mapping[str, Meaning]


@dataclass(frozen=True)
class ExportSpellings:
    """Every export's columns merged into one meaning per header, the words that tell a
    phone column's type when no export names it, and the footer line patterns."""

    exports: tuple[Export, ...]
    meanings: Mapping[str, Meaning]
    phone_words: tuple[tuple[str, str], ...]
    footer_lines: tuple[re.Pattern[str], ...]

    def meaning(self, header: str) -> Meaning | None:
        return self.meanings.get(header_key(header))

    def phone_type(self, header: str) -> str | None:
        """The line type of a phone column: the data's for a header it knows (None when the
        header names none: “Phone”, “Fax”), else the first type whose word the header holds
        (“Cell (work)” is a mobile)."""
        known = self.meaning(header)
        if known is not None:
            return known.phone_type
        key = header_key(header)
        return next((kind for word, kind in self.phone_words if word in key), None)

    def is_footer_line(self, text: str) -> bool:
        line = " ".join(text.split())
        return any(pattern.fullmatch(line) for pattern in self.footer_lines)


# -- reading and checking the file -------------------------------------------------------------

_FIELDS = frozenset(CONTACT_INPUT_FIELDS) - frozenset(PHONE_SLOTS)


def _meaning(place: str, header: str, value: object, *, fallback: bool) -> Meaning:
    if not isinstance(value, str):
        raise ExportDataError(f"{place}: the meaning of \u201c{header}\u201d must be a string.")
    field, _, kind = value.partition(":")
    if field == PHONE:
        if fallback:
            raise ExportDataError(
                f"{place}: \u201c{header}\u201d is a phone column; phone columns are never "
                "fallbacks, list it under columns."
            )
        if kind and kind not in PHONE_TYPES:
            raise ExportDataError(
                f"{place}: \u201c{header}\u201d has phone type \u201c{kind}\u201d; a phone type "
                f"is one of {', '.join(PHONE_TYPES)}."
            )
        return Meaning(PHONE, kind or None)
    if field in PHONE_SLOTS:
        raise ExportDataError(
            f"{place}: \u201c{header}\u201d names the slot {field}; write \u201cphone\u201d or "
            "\u201cphone:<type>\u201d, slots follow the file's column order."
        )
    if kind or (field not in _FIELDS and field != EXTRA):
        raise ExportDataError(
            f"{place}: \u201c{header}\u201d maps to \u201c{value}\u201d, which is no contact "
            "input field, phone column or \u201cextra\u201d."
        )
    if field == EXTRA and fallback:
        raise ExportDataError(f"{place}: \u201c{header}\u201d: an extra column is no fallback.")
    return Meaning(field, None, fallback)


def _table(data: Mapping[str, Any], key: str, place: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ExportDataError(f"{place}.{key} must be a table.")
    return value


def _text(data: Mapping[str, Any], key: str, place: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ExportDataError(f"{place} needs a {key}: a non-empty string.")
    return " ".join(value.split())


def _export(key: str, data: object) -> Export:
    place = f"[exports.{key}]"
    if not isinstance(data, dict):
        raise ExportDataError(f"{place} must be a table.")
    unknown = set(data) - {"name", "source", "columns", "fallback_columns"}
    if unknown:
        raise ExportDataError(f"{place} has unknown keys: {', '.join(sorted(unknown))}.")
    columns: dict[str, Meaning] = {}
    spelled: dict[str, str] = {}
    for table, fallback in (("columns", False), ("fallback_columns", True)):
        for header, value in _table(data, table, place).items():
            column = header_key(header)
            if not column:
                raise ExportDataError(
                    f"{place}: the header \u201c{header}\u201d has no letter or digit."
                )
            if column in spelled:
                raise ExportDataError(
                    f"{place}: \u201c{header}\u201d and \u201c{spelled[column]}\u201d are one "
                    "spelling (case, spaces and punctuation aside)."
                )
            spelled[column] = header
            columns[column] = _meaning(f"{place}.{table}", header, value, fallback=fallback)
    return Export(key, _text(data, "name", place), _text(data, "source", place), columns)


def _merged(exports: Sequence[Export]) -> dict[str, Meaning]:
    """One meaning per header: a contact field's own name first, then the generic section's,
    then that of the exports, which wins when they all agree."""
    merged = {header_key(f): Meaning(f) for f in _FIELDS}
    merged |= {header_key(slot): Meaning(PHONE) for slot in PHONE_SLOTS}
    generic = next((e for e in exports if e.key == GENERIC), None)
    if generic is not None:
        merged |= generic.columns
    named: dict[str, dict[Meaning, list[str]]] = {}
    for export in exports:
        if export.key == GENERIC:
            continue
        for column, meaning in export.columns.items():
            named.setdefault(column, {}).setdefault(meaning, []).append(export.key)
    for column, meanings in named.items():
        if len(meanings) == 1:
            merged[column] = next(iter(meanings))
        elif generic is None or column not in generic.columns:
            told = "; ".join(f"{', '.join(keys)}: {m}" for m, keys in meanings.items())
            raise ExportDataError(
                f"The header key \u201c{column}\u201d means different things ({told}): give "
                "it its meaning in [exports.generic]."
            )
    return merged


def _phone_words(entries: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(entries, list):
        raise ExportDataError("[[phone_words]] must be a list of tables.")
    words: list[tuple[str, str]] = []
    for entry in entries:
        kind = entry.get("type") if isinstance(entry, dict) else None
        listed = entry.get("words") if isinstance(entry, dict) else None
        if kind not in PHONE_TYPES or not isinstance(listed, list) or not listed:
            raise ExportDataError(
                f"[[phone_words]]: each entry needs a type ({', '.join(PHONE_TYPES)}) and a "
                f"list of words; got {entry!r}."
            )
        words += [(header_key(str(word)), str(kind)) for word in listed]
    return tuple(words)


def _footer_lines(data: Mapping[str, Any]) -> tuple[re.Pattern[str], ...]:
    lines = _table(data, "footer", "").get("lines", [])
    if not isinstance(lines, list):
        raise ExportDataError("[footer].lines must be a list of patterns.")
    patterns = []
    for line in lines:
        try:
            patterns.append(re.compile(str(line), re.IGNORECASE))
        except re.error as exc:
            raise ExportDataError(
                f"[footer].lines: \u201c{line}\u201d is no pattern: {exc}."
            ) from None
    return tuple(patterns)


def parse_spellings(text: str) -> ExportSpellings:
    """The spellings a data file's text holds, or an ``ExportDataError`` naming the fault."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExportDataError(f"The export data file is not valid TOML: {exc}.") from None
    exports = tuple(_export(k, v) for k, v in _table(data, "exports", "").items())
    return ExportSpellings(
        exports, _merged(exports), _phone_words(data.get("phone_words", [])), _footer_lines(data)
    )


def load_spellings(path: Path = DATA_FILE) -> ExportSpellings:
    try:
        return parse_spellings(path.read_text(encoding="utf-8"))
    except ExportDataError as exc:
        raise ExportDataError(f"{path.name}: {exc}") from None


@cache
def spellings() -> ExportSpellings:
    """The package's export data, read on first use."""
    return load_spellings()


# -- report footers -----------------------------------------------------------------------------


def _single_line(row: Sequence[str]) -> str | None:
    """The text of a row that can be a footer line: one filled cell holding neither an
    email address nor a phone number."""
    filled = [cell.strip() for cell in row if cell.strip()]
    if len(filled) != 1 or "@" in filled[0] or analyse(filled[0]) is not None:
        return None
    return filled[0]


def footer_length(
    rows: Sequence[Sequence[str]], blank_before: Iterable[int], known: ExportSpellings
) -> int:
    """How many rows at the end of ``rows`` are a report's footer. ``blank_before`` holds the
    indices of the rows that follow a blank line. A block after a blank line is footer when
    every row of it can be one and most of them match a footer pattern (a report's name and
    its organisation's are not patterns); then, going up, each row matching a pattern
    (“Grand Totals (50 records)” right under the contacts) is footer too."""
    end = len(rows)
    starts = sorted((i for i in set(blank_before) if 0 < i < end), reverse=True)
    for start in starts:
        lines = [_single_line(row) for row in rows[start:end]]
        matched = sum(line is not None and known.is_footer_line(line) for line in lines)
        if None in lines or matched * 2 <= len(lines):
            break
        end = start
    while end > 0:
        line = _single_line(rows[end - 1])
        if line is None or not known.is_footer_line(line):
            break
        end -= 1
    return len(rows) - end
