"""The files a do-not-call import reads: plain, gzip or zip (told by their first bytes, not
their name), flat text or XML (told by the first character), streamed in blocks so that memory
stays bounded whatever the file's size (P180-P184).

The XML reader is expat's push parser, fed a block at a time; a document type declaration is
refused outright, so no entity is ever defined, let alone expanded (P183)."""

from __future__ import annotations

import gzip
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import IO, Any, Protocol
from xml.parsers import expat

from dialscore.kit.linefiles import FileFormatError
from dialscore.scoring.imports import (
    DncMarkError,
    DncScan,
    _dnc_digits,
    dnc_rejection_reason,
)

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
_SNIFF = 4096
_BOM = b"\xef\xbb\xbf"
# XML limits: nesting, text kept per element, and leaves gathered under one element before it
# is taken for a list of numbers rather than one record.
MAX_DEPTH = 32
MAX_TEXT = 256
MAX_FIELDS = 64


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Replay:
    """A stream whose first bytes were already read to tell its format."""

    def __init__(self, first: bytes, rest: Readable) -> None:
        self.first = first
        self.rest = rest

    def read(self, size: int = -1, /) -> bytes:
        if self.first:
            out, self.first = self.first, b""
            return out
        return self.rest.read(size)


@dataclass
class DncSource:
    """An opened do-not-call file: its decompressed bytes, what it is, how far it was read."""

    stream: Readable
    compression: str  # none | gzip | zip
    format: str  # flat | xml
    size: int
    position: Callable[[], int]
    # The time the archive says its file was written (zip entry, gzip header), if it says.
    archive_date: date | None = None


def _sniff(stream: Readable) -> tuple[bytes, str]:
    first = stream.read(_SNIFF)
    text = first.removeprefix(_BOM).lstrip()
    return first, "xml" if text.startswith(b"<") else "flat"


@contextmanager
def open_dnc(path: Path) -> Iterator[DncSource]:
    """Opens a do-not-call file, decompressing a gzip or zip file (a zip holds exactly one
    file); the format is known from the decompressed bytes."""
    with ExitStack() as stack:
        raw: IO[bytes] = stack.enter_context(path.open("rb"))
        size = max(1, os.fstat(raw.fileno()).st_size)
        magic = raw.read(4)
        raw.seek(0)
        stream: Readable
        archive_date: date | None = None
        try:
            if magic.startswith(GZIP_MAGIC):
                compression = "gzip"
                gz = stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))
                first, fmt = _sniff(gz)
                if gz.mtime:  # 0: the writer did not say
                    archive_date = datetime.fromtimestamp(gz.mtime, UTC).date()
                stream = gz
            elif magic in ZIP_MAGICS:
                compression = "zip"
                archive = stack.enter_context(zipfile.ZipFile(raw))
                members = [info for info in archive.infolist() if not info.is_dir()]
                if len(members) != 1:
                    raise FileFormatError(
                        f"a zip file must hold exactly one file; this one holds {len(members)}"
                    )
                archive_date = date(*members[0].date_time[:3])
                stream = stack.enter_context(archive.open(members[0]))
                first, fmt = _sniff(stream)
            else:
                compression = "none"
                stream = raw
                first, fmt = _sniff(raw)
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
            raise FileFormatError(f"cannot decompress the file: {exc}") from exc
        yield DncSource(
            stream=_Replay(first, stream),
            compression=compression,
            format=fmt,
            size=size,
            position=raw.tell,
            archive_date=archive_date,
        )


def reading_errors() -> tuple[type[BaseException], ...]:
    """What a damaged compressed stream raises while it is read."""
    return (EOFError, zlib.error, zipfile.BadZipFile, gzip.BadGzipFile)


# -- dates -----------------------------------------------------------------------------------

_DATE_PATTERNS = (
    (re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})"), (1, 2, 3)),
    (re.compile(r"(\d{4})(\d{2})(\d{2})"), (1, 2, 3)),
    (re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})"), (3, 1, 2)),
)


def parse_file_date(text: str) -> date | None:
    """A date as a file may state it: ``2026-11-01`` (with a time or not), ``20261101`` or the
    US ``11/01/2026``; None if it is none of these."""
    text = text.strip()
    for pattern, (y, m, d) in _DATE_PATTERNS:
        found = pattern.match(text)
        if found:
            try:
                return date(int(found.group(y)), int(found.group(m)), int(found.group(d)))
            except ValueError:
                return None
    return None


# -- XML -------------------------------------------------------------------------------------


def _key(name: str) -> str:
    """An element or attribute name as compared: no namespace prefix, case, ``_`` or ``-``."""
    return name.rpartition(":")[2].lower().replace("_", "").replace("-", "")


AREA_NAMES = frozenset({"areacode", "npa", "area"})
NUMBER_NAMES = frozenset(
    {"phonenumber", "number", "phone", "telephonenumber", "telephone", "tn", "phonenum", "tel",
     "localnumber", "subscribernumber"}
)  # fmt: skip
ACTION_NAMES = frozenset(
    {"action", "changetype", "change", "type", "status", "flag", "operation", "op", "changecode",
     "actioncode"}
)  # fmt: skip
ADD_SECTIONS = frozenset({"additions", "added", "adds", "addition", "addlist"})
DELETE_SECTIONS = frozenset(
    {"deletions", "deleted", "deletes", "deletion", "deletelist", "removals", "removed"}
)
DATE_NAMES = frozenset(
    {"date", "filedate", "downloaddate", "createdate", "creationdate", "created", "asof",
     "asofdate", "extractdate", "rundate", "generated", "listdate", "effectivedate"}
)  # fmt: skip
KIND_NAMES = frozenset({"kind", "listtype", "type", "downloadtype", "filetype"})
_ADD_WORDS = frozenset(
    {"a", "add", "added", "addition", "additions", "insert", "inserted", "new", "registered"}
)
_DELETE_WORDS = frozenset(
    {"d", "del", "delete", "deleted", "deletion", "deletions", "remove", "removed", "removal",
     "deregistered"}
)  # fmt: skip


def _action(value: str) -> bool | None:
    """True for a deletion mark, False for an addition, None for neither."""
    word = value.strip().lower()
    if word in _DELETE_WORDS:
        return True
    if word in _ADD_WORDS:
        return False
    return None


def _kind(value: str) -> str | None:
    word = value.strip().lower()
    if word.startswith("full"):
        return "full"
    if word.startswith("change") or word.startswith("delta"):
        return "changes"
    return None


@dataclass
class _Element:
    key: str
    attrs: dict[str, str]
    # Deletion (True), addition (False) or not said, by this element or one around it.
    section: bool | None
    text: list[str] = field(default_factory=list)
    text_size: int = 0
    has_children: bool = False
    is_list: bool = False
    # (key, text, attributes) of the leaf elements directly inside.
    leaves: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@dataclass
class XmlDnc:
    """Reads a do-not-call XML document into ``scan``: a record is an element whose leaf
    elements hold an area code (``AreaCode``, ``NPA``) and a 7-digit number (``PhoneNumber``,
    ``Number``, ``TN`` …), or one leaf holding the whole number (10 digits, 1 and 10 digits,
    ``areacode,number``). Its add or delete mark is a leaf or attribute (``Action``,
    ``ChangeType``, ``Type`` …: ``A``/``D``, ``add``/``delete`` …) or the section around it
    (``Additions``, ``Deletions``). Outside records, the document may say its date
    (``Date``, ``FileDate``, ``AsOf`` … as an attribute of the root or a leaf of a header)
    and its kind (``Type="full"``, ``ListType="changes"``). P183."""

    scan: DncScan
    file_date: date | None = None
    kind: str | None = None
    numbers: list[bytes] = field(default_factory=list)
    _stack: list[_Element] = field(default_factory=list)
    _parser: Any = None

    def __post_init__(self) -> None:
        parser = expat.ParserCreate()
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._refuse_dtd
        parser.EntityDeclHandler = self._refuse_dtd
        parser.ExternalEntityRefHandler = self._refuse_entity
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._text
        parser.buffer_text = True
        self._parser = parser

    def feed(self, data: bytes, final: bool = False) -> list[bytes]:
        """The numbers the next bytes of the document complete (a deletion's with ``-``)."""
        try:
            self._parser.Parse(data, final)
        except expat.ExpatError as exc:
            reason = expat.ErrorString(exc.code)
            raise FileFormatError(
                f"not well-formed XML at line {exc.lineno}, column {exc.offset + 1}: {reason}; "
                "nothing was imported"
            ) from None
        numbers, self.numbers = self.numbers, []
        return numbers

    def _refuse_dtd(self, *args: object) -> None:
        raise FileFormatError(
            "XML with a document type declaration (DTD) or entities is refused: the "
            "registry's files have none, and entities can expand without bound"
        )

    def _refuse_entity(self, *args: object) -> int:
        self._refuse_dtd()
        return 0

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        if len(self._stack) >= MAX_DEPTH:
            raise FileFormatError(f"XML nested deeper than {MAX_DEPTH} elements is refused")
        key = _key(name)
        attrs = {_key(k): v for k, v in attrs.items()}
        parent = self._stack[-1] if self._stack else None
        section = parent.section if parent is not None else None
        if key in ADD_SECTIONS:
            section = False
        elif key in DELETE_SECTIONS:
            section = True
        for attr in ACTION_NAMES & attrs.keys():
            said = _action(attrs[attr])
            section = said if said is not None else section
        if parent is None:
            self._document_attrs(attrs)
        else:
            parent.has_children = True
        self._stack.append(_Element(key, attrs, section))

    def _document_attrs(self, attrs: dict[str, str]) -> None:
        for name, value in attrs.items():
            if name in DATE_NAMES and self.file_date is None:
                self.file_date = parse_file_date(value)
            if name in KIND_NAMES and self.kind is None:
                self.kind = _kind(value)

    def _text(self, data: str) -> None:
        element = self._stack[-1]
        if element.text_size < MAX_TEXT:
            element.text.append(data[:MAX_TEXT])
            element.text_size += len(data)

    def _end(self, name: str) -> None:
        element = self._stack.pop()
        parent = self._stack[-1] if self._stack else None
        if not element.has_children:
            if parent is None:
                return
            leaf = (element.key, "".join(element.text).strip()[:MAX_TEXT], element.attrs)
            if parent.is_list:
                if leaf[0] in NUMBER_NAMES:
                    self._record(None, leaf[1], _leaf_action(leaf, parent.section))
                return
            parent.leaves.append(leaf)
            if len(parent.leaves) > MAX_FIELDS:
                # Not one record: a list of whole numbers, each a record.
                parent.is_list = True
                for key, text, attrs in parent.leaves:
                    if key in NUMBER_NAMES:
                        self._record(None, text, _leaf_action((key, text, attrs), parent.section))
                parent.leaves = []
            return
        if element.is_list:
            for key, text, attrs in element.leaves:
                if key in NUMBER_NAMES:
                    self._record(None, text, _leaf_action((key, text, attrs), element.section))
            return
        self._finish(element)

    def _finish(self, element: _Element) -> None:
        area: str | None = None
        numbers: list[tuple[str, dict[str, str]]] = []
        action = element.section
        for key, text, attrs in element.leaves:
            if key in AREA_NAMES and area is None:
                area = text
            elif key in NUMBER_NAMES:
                numbers.append((text, attrs))
            elif key in ACTION_NAMES and _action(text) is not None:
                action = _action(text)
        if not numbers:
            if area is not None:
                self._record(area, "", action)
                return
            # A header: the document's date and kind, if it says them here.
            for key, text, _ in element.leaves:
                if key in DATE_NAMES and self.file_date is None:
                    self.file_date = parse_file_date(text)
                if key in KIND_NAMES and self.kind is None:
                    self.kind = _kind(text)
            return
        if area is not None:
            self._record(area, numbers[0][0], action)
            return
        for text, attrs in numbers:
            self._record(None, text, _leaf_action(("", text, attrs), action))

    def _record(self, area: str | None, number: str, delete: bool | None) -> None:
        scan = self.scan
        scan.lines += 1
        text = number if area is None else f"{area},{number}"
        raw = text.encode("utf-8", errors="replace")
        digits = _dnc_digits(raw.translate(None, b" \t\r\n-().\"'")) if raw.strip() else None
        if digits is None:
            scan.reject(self._parser.CurrentLineNumber, text, dnc_rejection_reason(raw))
            return
        if delete is not None:
            if scan.remove:
                raise DncMarkError(
                    f"line {self._parser.CurrentLineNumber} has an add or delete mark: --remove "
                    "is for plain files of numbers; a change list says itself what to add and "
                    "what to delete"
                )
            scan.marked += 1
        scan.accepted += 1
        if delete or scan.remove:
            scan.deletions += 1
            self.numbers.append(b"-" + digits)
        else:
            self.numbers.append(digits)


def _leaf_action(leaf: tuple[str, str, dict[str, str]], around: bool | None) -> bool | None:
    for attr in ACTION_NAMES & leaf[2].keys():
        said = _action(leaf[2][attr])
        if said is not None:
            return said
    return around
