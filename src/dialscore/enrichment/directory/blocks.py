"""Cutting a directory file into blocks of whole lines: its format, where a block may end
(CSV: never inside a quoted field, as far as the quotes before show), and the line reader."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from dialscore.kit.linefiles import FileFormatError

# Bytes of whole lines per parsed block.
BLOCK_BYTES = 1 << 20
# A line (or quoted field) longer than this is not a directory file's.
MAX_LINE_BYTES = 64 << 20


def first_character(path: Path) -> bytes:
    """The file's first byte that is not blank (nor a byte-order mark)."""
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
    return "jsonl" if first_character(path) in (b"{", b"[") else "csv"


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
class Block:
    """Whole lines of a file, from line ``first_line`` to the file position ``end``."""

    data: bytes
    first_line: int
    end: int  # the file position after it
    final: bool

    @property
    def start(self) -> int:
        return self.end - len(self.data)


class LineReader:
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

    def read(self, size: int) -> Block | None:
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
            found = Block(block, self.line, self.position - len(self.carry), final=False)
            self.line += block.count(b"\n")
            return found
        self.done = True
        return Block(self.carry, self.line, self.position, final=True)

    def blocks(self, size: int) -> Iterator[Block]:
        while (block := self.read(size)) is not None:
            yield block
