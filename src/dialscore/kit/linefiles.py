"""What an importer tells of a file's lines: the lines it accepted, skipped or rejected (the
first few quoted, with why), a file it cannot read at all, and the key of a column's name."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# How many rejected lines a report quotes.
MAX_EXAMPLES = 5
# How much of a rejected line a report quotes.
MAX_QUOTED = 80


class FileFormatError(ValueError):
    """The file as a whole cannot be read (for instance, a CSV without the columns it needs)."""


@dataclass(frozen=True)
class Rejection:
    """A line that was not imported: where, what it said (shortened) and why."""

    line: int
    text: str
    reason: str

    def describe(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "reason": self.reason}


def quote(text: str | bytes) -> str:
    """A rejected line as a report quotes it: without its line end, at most MAX_QUOTED
    characters."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 1] + "…"


@dataclass
class LineCounts:
    """What became of the lines of one file: accepted, skipped (blank, comment, header) or
    invalid; with the first few invalid lines quoted."""

    lines: int = 0
    accepted: int = 0
    skipped: int = 0
    invalid: int = 0
    rejections: list[Rejection] = field(default_factory=list)

    def reject(self, line: int, text: str | bytes, reason: str) -> None:
        self.invalid += 1
        if len(self.rejections) < MAX_EXAMPLES:
            self.rejections.append(Rejection(line, quote(text), reason))


def column_key(name: str) -> str:
    """A column's name as headers are compared: without case, spaces, ``_``, ``-``, ``.`` or
    a byte-order mark."""
    return "".join(ch for ch in name.strip().lstrip("\ufeff").lower() if ch not in " _-.")
