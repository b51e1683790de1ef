"""Bulk loaders of imported evidence: stream a file, parse it with ``scoring.imports`` and write
it to SQLite or PostgreSQL in large batches through the driver itself (no ORM on this path)."""

from __future__ import annotations

import io
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import psycopg
from sqlalchemy.engine import make_url

from dialscore.kit.db import sync_url
from dialscore.scoring.imports import (
    CompanyLineRow,
    DncScan,
    LineCounts,
    NumberBlockRow,
    scan_company_lines,
    scan_number_blocks,
)

# Bytes read so far; called after each batch is written.
Progress = Callable[[int], None]

# Numbers per write transaction. Files in random order insert all over the table's B-tree, and
# each commit writes every page it touched: 50k-number batches ran at ~100k numbers/s on a
# 10M-row SQLite table, 250k-number batches at well over 200k. A batch holds the write lock for
# well under a second, so a running service's writers wait that long at most.
DNC_BATCH = 250_000
ROW_BATCH = 10_000
READ_CHUNK = 1 << 20
MAX_LIST_NAME = 64
# The import's own page cache (KiB): keeps a few hundred MB of the table's pages between
# batches instead of SQLite's default 2 MB.
SQLITE_IMPORT_CACHE_KIB = 512 * 1024


@dataclass(frozen=True)
class DncReport:
    """The outcome of one do-not-call file. Numbers counted in ``already_listed`` were on the
    list before the import or earlier in the file; ``not_listed`` likewise for removals."""

    counts: DncScan
    list_name: str
    remove: bool
    imported: int
    already_listed: int
    removed: int
    not_listed: int
    seconds: float


@dataclass(frozen=True)
class UpsertReport:
    """The outcome of one number-block or company-lines file."""

    counts: LineCounts
    imported: int
    updated: int
    unchanged: int
    seconds: float


# -- connections -----------------------------------------------------------------------------


@dataclass
class _Connection:
    sqlite: sqlite3.Connection | None = None
    postgres: psycopg.Connection[Any] | None = None


@contextmanager
def _connect(url: str) -> Iterator[_Connection]:
    parsed = make_url(sync_url(url))
    if parsed.get_backend_name() == "sqlite":
        lite = sqlite3.connect(parsed.database or "", isolation_level=None, timeout=30.0)
        try:
            for pragma in (
                "journal_mode=WAL",
                "busy_timeout=30000",
                "synchronous=NORMAL",
                f"cache_size=-{SQLITE_IMPORT_CACHE_KIB}",
                # A large batch grows the WAL; give the space back once it is checkpointed.
                "journal_size_limit=67108864",
            ):
                lite.execute(f"PRAGMA {pragma}")
            yield _Connection(sqlite=lite)
        finally:
            lite.close()
    else:
        conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(conninfo, autocommit=True) as pg:
            yield _Connection(postgres=pg)


@contextmanager
def _sqlite_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    # IMMEDIATE takes the write lock up front (waiting up to busy_timeout for the service).
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# -- do-not-call lists -----------------------------------------------------------------------


class _DncWriter(Protocol):
    def add(self, digits: Sequence[bytes]) -> int:
        """Lists the numbers; how many were not on the list yet."""
        ...

    def remove(self, digits: Sequence[bytes]) -> int:
        """Takes the numbers off the list; how many were on it."""
        ...


class _SqliteDncWriter:
    """One statement per batch: the numbers go in as one JSON array (json_each), so SQLite
    binds nothing per row and runs the whole batch without holding Python's GIL."""

    def __init__(self, conn: sqlite3.Connection, list_name: str) -> None:
        self.conn = conn
        self.list_name = list_name

    def add(self, digits: Sequence[bytes]) -> int:
        # Sorted, the batch's rows land on neighbouring pages of the primary key.
        sql = (
            "INSERT INTO dnc_numbers (number, list_name) SELECT value, ? FROM json_each(?) "
            "ORDER BY 1 ON CONFLICT DO NOTHING"
        )
        with _sqlite_transaction(self.conn):
            cursor = self.conn.execute(sql, (self.list_name, _json_array(digits)))
        return cursor.rowcount

    def remove(self, digits: Sequence[bytes]) -> int:
        sql = (
            "DELETE FROM dnc_numbers WHERE list_name = ? "
            "AND number IN (SELECT value FROM json_each(?))"
        )
        with _sqlite_transaction(self.conn):
            cursor = self.conn.execute(sql, (self.list_name, _json_array(digits)))
        return cursor.rowcount


def _json_array(digits: Sequence[bytes]) -> str:
    return (b"[" + b",".join(digits) + b"]").decode("ascii")


class _PostgresDncWriter:
    """COPY each batch into a temporary table, then one INSERT … SELECT (or DELETE … USING)."""

    def __init__(self, conn: psycopg.Connection[Any], list_name: str) -> None:
        self.conn = conn
        self.list_name = list_name
        conn.execute(
            "CREATE TEMPORARY TABLE IF NOT EXISTS dnc_import (number bigint NOT NULL) "
            "ON COMMIT DELETE ROWS"
        )

    def _copy(self, cursor: psycopg.Cursor[Any], digits: Sequence[bytes]) -> None:
        with cursor.copy("COPY dnc_import (number) FROM STDIN") as copy:
            copy.write(b"\n".join(digits) + b"\n")

    def add(self, digits: Sequence[bytes]) -> int:
        with self.conn.transaction(), self.conn.cursor() as cursor:
            self._copy(cursor, digits)
            cursor.execute(
                "INSERT INTO dnc_numbers (number, list_name) "
                "SELECT number, %s FROM dnc_import ORDER BY number ON CONFLICT DO NOTHING",
                (self.list_name,),
            )
            return cursor.rowcount

    def remove(self, digits: Sequence[bytes]) -> int:
        with self.conn.transaction(), self.conn.cursor() as cursor:
            self._copy(cursor, digits)
            cursor.execute(
                "DELETE FROM dnc_numbers AS d USING dnc_import AS i "
                "WHERE d.list_name = %s AND d.number = i.number",
                (self.list_name,),
            )
            return cursor.rowcount


def _read_blocks(handle: IO[bytes]) -> Iterator[bytes]:
    """Whole lines in blocks of about READ_CHUNK bytes, each without its final line feed."""
    carry = b""
    while chunk := handle.read(READ_CHUNK):
        cut = chunk.rfind(b"\n")
        if cut < 0:
            carry += chunk  # one line longer than a chunk
            continue
        yield carry + chunk[:cut]
        carry = chunk[cut + 1 :]
    if carry:
        yield carry


def _dnc_batches(
    handle: IO[bytes], scan: DncScan, batch_size: int
) -> Iterator[tuple[list[bytes], int]]:
    """(numbers, bytes read) in batches of at least ``batch_size`` numbers (the last smaller)."""
    batch: list[bytes] = []
    for block in _read_blocks(handle):
        batch += scan.feed(block)
        if len(batch) >= batch_size:
            yield batch, handle.tell()
            batch = []
    if batch:
        yield batch, handle.tell()


def import_dnc(
    url: str,
    path: Path,
    *,
    list_name: str,
    remove: bool = False,
    progress: Progress | None = None,
    batch_size: int = DNC_BATCH,
) -> DncReport:
    """Adds the numbers of a do-not-call file to the list ``list_name`` (or, with ``remove``,
    takes them off it). Re-importing a file changes nothing and counts its numbers as already
    listed."""
    if not list_name or len(list_name) > MAX_LIST_NAME:
        raise ValueError(f"a list name has 1 to {MAX_LIST_NAME} characters")
    started = time.perf_counter()
    scan = DncScan()
    changed = 0
    with _connect(url) as conn, path.open("rb") as handle:
        writer: _DncWriter
        if conn.sqlite is not None:
            writer = _SqliteDncWriter(conn.sqlite, list_name)
        else:
            assert conn.postgres is not None
            writer = _PostgresDncWriter(conn.postgres, list_name)
        write = writer.remove if remove else writer.add
        # Reading and parsing the next batch (Python, holding the GIL) overlaps with writing
        # this one (the database driver, which releases it): two cores instead of one.
        batches = _dnc_batches(handle, scan, batch_size)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dnc-parse") as parser:
            pending = parser.submit(next, batches, None)
            while (item := pending.result()) is not None:
                pending = parser.submit(next, batches, None)
                digits, position = item
                changed += write(digits)
                if progress is not None:
                    progress(position)
    unchanged = scan.accepted - changed
    return DncReport(
        counts=scan,
        list_name=list_name,
        remove=remove,
        imported=0 if remove else changed,
        already_listed=0 if remove else unchanged,
        removed=changed if remove else 0,
        not_listed=unchanged if remove else 0,
        seconds=time.perf_counter() - started,
    )


# -- number blocks and company lines ---------------------------------------------------------


@dataclass(frozen=True)
class _Table:
    name: str
    key: str
    values: tuple[str, ...]


_BLOCKS = _Table("number_blocks", "prefix", ("category", "carrier"))
_COMPANY_LINES = _Table("company_lines", "number", ("company", "ivr_path"))

Row = tuple[str, str | None, str | None]


class _Upserts:
    """Inserts new rows and updates changed ones, a batch per transaction, counting which."""

    def __init__(self, conn: _Connection, table: _Table) -> None:
        self.conn = conn
        self.table = table
        self.imported = self.updated = self.unchanged = 0
        columns = (table.key, *table.values)
        self._select = f"SELECT {', '.join(columns)} FROM {table.name} WHERE {table.key} "
        updates = ", ".join(f"{c} = excluded.{c}" for c in table.values)
        mark = "?" if conn.sqlite is not None else "%s"
        self._upsert = (
            f"INSERT INTO {table.name} ({', '.join(columns)}) "
            f"VALUES ({', '.join(mark for _ in columns)}) "
            f"ON CONFLICT ({table.key}) DO UPDATE SET {updates}"
        )

    def write(self, rows: Sequence[Row]) -> None:
        # The last row of a key wins; PostgreSQL refuses to update one row twice in a statement.
        latest = {row[0]: row for row in rows}
        if self.conn.sqlite is not None:
            lite = self.conn.sqlite
            with _sqlite_transaction(lite):
                found = lite.execute(
                    self._select + "IN (SELECT value FROM json_each(?))",
                    (json.dumps(list(latest)),),
                ).fetchall()
                changes = self._changes(latest, found)
                lite.executemany(self._upsert, changes)
        else:
            assert self.conn.postgres is not None
            pg = self.conn.postgres
            with pg.transaction(), pg.cursor() as cursor:
                # FOR UPDATE: a concurrent import of the same rows waits instead of miscounting.
                cursor.execute(self._select + "= ANY(%s) FOR UPDATE", (list(latest),))
                changes = self._changes(latest, cursor.fetchall())
                cursor.executemany(self._upsert, changes)

    def _changes(self, latest: dict[str, Row], found: Sequence[Any]) -> list[Row]:
        existing = {row[0]: tuple(row) for row in found}
        changes = [row for key, row in latest.items() if existing.get(key) != row]
        self.updated += sum(1 for row in changes if row[0] in existing)
        self.imported += sum(1 for row in changes if row[0] not in existing)
        self.unchanged += len(latest) - len(changes)
        return changes


def _import_rows(
    url: str,
    path: Path,
    table: _Table,
    rows_of: Callable[[IO[str], LineCounts], Iterator[Row]],
    progress: Progress | None,
) -> UpsertReport:
    started = time.perf_counter()
    counts = LineCounts()
    with (
        _connect(url) as conn,
        path.open("rb") as raw,
        io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="") as handle,
    ):
        upserts = _Upserts(conn, table)
        batch: list[Row] = []
        for row in rows_of(handle, counts):
            batch.append(row)
            if len(batch) >= ROW_BATCH:
                upserts.write(batch)
                batch = []
                if progress is not None:
                    progress(raw.tell())
        if batch:
            upserts.write(batch)
        if progress is not None:
            progress(raw.tell())
    return UpsertReport(
        counts=counts,
        imported=upserts.imported,
        updated=upserts.updated,
        unchanged=upserts.unchanged,
        seconds=time.perf_counter() - started,
    )


def _block_rows(handle: IO[str], counts: LineCounts) -> Iterator[Row]:
    for block in scan_number_blocks(handle, counts):
        yield _block_row(block)


def _block_row(block: NumberBlockRow) -> Row:
    return (block.prefix, block.category, block.carrier)


def _company_rows(handle: IO[str], counts: LineCounts) -> Iterator[Row]:
    for line in scan_company_lines(handle, counts):
        yield _company_row(line)


def _company_row(line: CompanyLineRow) -> Row:
    return (line.number, line.company, line.ivr_path)


def import_number_blocks(url: str, path: Path, *, progress: Progress | None = None) -> UpsertReport:
    """Adds the blocks of a number-block file; a block already known takes the file's
    category and carrier."""
    return _import_rows(url, path, _BLOCKS, _block_rows, progress)


def import_company_lines(url: str, path: Path, *, progress: Progress | None = None) -> UpsertReport:
    """Adds the lines of a company-lines file; a line already known takes the file's company
    and ivrPath."""
    return _import_rows(url, path, _COMPANY_LINES, _company_rows, progress)
