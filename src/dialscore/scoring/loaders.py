"""Bulk loaders of imported evidence: stream a file, parse it with ``scoring.imports`` and write
it to SQLite or PostgreSQL in large batches through the driver itself (no ORM on this path)."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psycopg

from dialscore.kit.bulkload import (
    DriverConnection,
    Progress,
    analyze,
    connect,
    no_progress,
    prefetching,
    sqlite_transaction,
)
from dialscore.kit.linefiles import LineCounts
from dialscore.scoring.imports import (
    CsvCounts,
    DncScan,
    scan_company_lines,
    scan_number_blocks,
)

# Numbers parsed per batch (read on a helper thread while the previous batch is written).
DNC_BATCH = 250_000
# Numbers per write transaction when SQLite merges its sorted stage into the list: one such
# range holds the write lock for about 0.1 s, so a running service's writers hardly wait.
DNC_RANGE = 250_000
ROW_BATCH = 10_000
READ_CHUNK = 1 << 20
MAX_LINE = 1 << 16
MAX_LIST_NAME = 64
# The sorter's memory follows the main database's cache size; on 10M numbers, 8 MiB runs
# sorted in 3.6 s, 256 MiB runs in 12 s and 1 GiB in 14 s (smaller runs stay in CPU caches).
SQLITE_SORT_CACHE_KIB = 8 * 1024
_LAST_NUMBER = 2**63 - 1


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


# -- do-not-call lists -----------------------------------------------------------------------


def _read_blocks(handle: IO[bytes]) -> Iterator[bytes]:
    """Whole lines in blocks of about READ_CHUNK bytes, each without its final line feed. Of a
    line longer than MAX_LINE (not a number: a wrong file, say), only the ends are kept."""
    carry = b""
    while chunk := handle.read(READ_CHUNK):
        cut = chunk.rfind(b"\n")
        if cut < 0:
            if len(carry) < MAX_LINE:
                carry += chunk
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


def _json_array(digits: Sequence[bytes]) -> str:
    return (b"[" + b",".join(digits) + b"]").decode("ascii")


def _sqlite_dnc(
    conn: sqlite3.Connection,
    handle: IO[bytes],
    scan: DncScan,
    *,
    list_name: str,
    remove: bool,
    batch_size: int,
    range_size: int,
    progress: Progress,
) -> int:
    """Stages the file's numbers in a temporary table, sorts them (an index), then writes them
    to the list range by range in key order; returns how many rows were added (or removed).

    Written straight from a file in random order, each transaction touched pages all over the
    list's B-tree and SQLite wrote every one of them at commit: 50k-number batches ran at
    ~100k numbers/s on a 10M-line file. In key order, a range touches neighbouring pages only."""
    # SQLite's temporary directory (SQLITE_TMPDIR, else /var/tmp or /tmp), removed on close.
    for pragma in (
        "temp_store=FILE",
        f"cache_size=-{SQLITE_SORT_CACHE_KIB}",
        "temp.cache_size=-65536",
        "threads=2",
    ):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("DROP TABLE IF EXISTS temp.dnc_stage")
    conn.execute("CREATE TEMPORARY TABLE dnc_stage (number INTEGER NOT NULL)")
    size = max(1, os.fstat(handle.fileno()).st_size)
    with prefetching(_dnc_batches(handle, scan, batch_size)) as batches:
        for digits, position in batches:
            # One statement per batch, the numbers as one JSON array: nothing bound per row,
            # and the temporary database only, so the service's writers are not held up.
            conn.execute(
                "INSERT INTO temp.dnc_stage (number) SELECT value FROM json_each(?)",
                (_json_array(digits),),
            )
            progress("reading", position, size)
    progress("sorting", 0, 0)
    conn.execute("CREATE INDEX temp.dnc_stage_number ON dnc_stage (number)")
    if remove:
        write = (
            "DELETE FROM main.dnc_numbers WHERE list_name = ? AND number IN "
            "(SELECT number FROM temp.dnc_stage WHERE number > ? AND number <= ?)"
        )
    else:
        write = (
            "INSERT INTO main.dnc_numbers (number, list_name) SELECT number, ? "
            "FROM temp.dnc_stage WHERE number > ? AND number <= ? ORDER BY number "
            "ON CONFLICT DO NOTHING"
        )
    boundary = "SELECT number FROM temp.dnc_stage WHERE number > ? ORDER BY number LIMIT 1 OFFSET ?"
    changed = written = 0
    low = -1
    while low < _LAST_NUMBER:
        row = conn.execute(boundary, (low, range_size - 1)).fetchone()
        high = _LAST_NUMBER if row is None else int(row[0])
        with sqlite_transaction(conn):
            changed += conn.execute(write, (list_name, low, high)).rowcount
        low = high
        written = min(written + range_size, scan.accepted)
        progress("writing", written, scan.accepted)
    return changed


def _postgres_dnc(
    conn: psycopg.Connection[Any],
    handle: IO[bytes],
    scan: DncScan,
    *,
    list_name: str,
    remove: bool,
    batch_size: int,
    progress: Progress,
) -> int:
    """COPYs each batch into a temporary table, then one INSERT … SELECT … ON CONFLICT DO
    NOTHING (or DELETE … USING) per batch; returns how many rows were added (or removed)."""
    conn.execute(
        "CREATE TEMPORARY TABLE IF NOT EXISTS dnc_import (number bigint NOT NULL) "
        "ON COMMIT DELETE ROWS"
    )
    if remove:
        write = (
            "DELETE FROM dnc_numbers AS d USING dnc_import AS i "
            "WHERE d.list_name = %s AND d.number = i.number"
        )
    else:
        write = (
            "INSERT INTO dnc_numbers (number, list_name) "
            "SELECT number, %s FROM dnc_import ORDER BY number ON CONFLICT DO NOTHING"
        )
    size = max(1, os.fstat(handle.fileno()).st_size)
    changed = 0
    with prefetching(_dnc_batches(handle, scan, batch_size)) as batches:
        for digits, position in batches:
            with conn.transaction(), conn.cursor() as cursor:
                with cursor.copy("COPY dnc_import (number) FROM STDIN") as copy:
                    copy.write(b"\n".join(digits) + b"\n")
                cursor.execute(write, (list_name,))
                changed += cursor.rowcount
            progress("reading", position, size)
    analyze(conn, "dnc_numbers")
    return changed


def import_dnc(
    url: str,
    path: Path,
    *,
    list_name: str,
    remove: bool = False,
    progress: Progress = no_progress,
    batch_size: int = DNC_BATCH,
    range_size: int = DNC_RANGE,
) -> DncReport:
    """Adds the numbers of a do-not-call file to the list ``list_name`` (or, with ``remove``,
    takes them off it). Re-importing a file changes nothing and counts its numbers as already
    listed."""
    if not list_name or len(list_name) > MAX_LIST_NAME:
        raise ValueError(f"a list name has 1 to {MAX_LIST_NAME} characters")
    started = time.perf_counter()
    scan = DncScan()
    with connect(url) as conn, path.open("rb") as handle:
        if conn.sqlite is not None:
            changed = _sqlite_dnc(
                conn.sqlite,
                handle,
                scan,
                list_name=list_name,
                remove=remove,
                batch_size=batch_size,
                range_size=range_size,
                progress=progress,
            )
        else:
            assert conn.postgres is not None
            changed = _postgres_dnc(
                conn.postgres,
                handle,
                scan,
                list_name=list_name,
                remove=remove,
                batch_size=batch_size,
                progress=progress,
            )
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

# The key, then the table's value columns in order.
Row = tuple[str, str | None, str | None]


class _Upserts:
    """Inserts new rows and updates changed ones, a batch per transaction, counting which.
    Only the value columns the file has are written: a column it lacks stays as it was."""

    def __init__(self, conn: DriverConnection, table: _Table) -> None:
        self.conn = conn
        self.table = table
        self.imported = self.updated = self.unchanged = 0

    def write(self, rows: Sequence[Row], present: Collection[str]) -> None:
        """Writes rows with distinct keys."""
        table = self.table
        positions = [i for i, name in enumerate(table.values, start=1) if name in present]
        columns = [table.key, *(table.values[i - 1] for i in positions)]
        wanted = {row[0]: (row[0], *(row[i] for i in positions)) for row in rows}
        select = f"SELECT {', '.join(columns)} FROM {table.name} WHERE {table.key} "
        mark = "?" if self.conn.sqlite is not None else "%s"
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
        upsert = (
            f"INSERT INTO {table.name} ({', '.join(columns)}) "
            f"VALUES ({', '.join(mark for _ in columns)}) ON CONFLICT ({table.key}) "
            + (f"DO UPDATE SET {updates}" if updates else "DO NOTHING")
        )
        if self.conn.sqlite is not None:
            lite = self.conn.sqlite
            with sqlite_transaction(lite):
                found = lite.execute(
                    select + "IN (SELECT value FROM json_each(?))", (json.dumps(list(wanted)),)
                ).fetchall()
                lite.executemany(upsert, self._changes(wanted, found))
        else:
            assert self.conn.postgres is not None
            pg = self.conn.postgres
            with pg.transaction(), pg.cursor() as cursor:
                # FOR UPDATE: a concurrent import of the same rows waits instead of miscounting.
                cursor.execute(select + "= ANY(%s) FOR UPDATE", (list(wanted),))
                cursor.executemany(upsert, self._changes(wanted, cursor.fetchall()))

    def _changes(
        self, wanted: dict[str, tuple[str | None, ...]], found: Sequence[Any]
    ) -> list[tuple[str | None, ...]]:
        existing = {row[0]: tuple(row) for row in found}
        changes = [row for key, row in wanted.items() if existing.get(key) != row]
        updated = sum(1 for row in changes if row[0] in existing)
        self.updated += updated
        self.imported += len(changes) - updated
        self.unchanged += len(wanted) - len(changes)
        return changes


def _import_rows(
    url: str,
    path: Path,
    table: _Table,
    rows_of: Callable[[IO[str], CsvCounts], Iterator[Row]],
    progress: Progress,
) -> UpsertReport:
    started = time.perf_counter()
    counts = CsvCounts()
    size = max(1, path.stat().st_size)
    with (
        connect(url) as conn,
        path.open("rb") as raw,
        io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="") as handle,
    ):
        upserts = _Upserts(conn, table)
        batch: dict[str, Row] = {}
        for row in rows_of(handle, counts):
            # A key given again starts a new batch, so that each row counts once, in order.
            if len(batch) >= ROW_BATCH or row[0] in batch:
                upserts.write(list(batch.values()), counts.columns)
                batch = {}
                progress("reading", raw.tell(), size)
            batch[row[0]] = row
        if batch:
            upserts.write(list(batch.values()), counts.columns)
        if conn.postgres is not None:
            analyze(conn.postgres, table.name)
        progress("reading", raw.tell(), size)
    return UpsertReport(
        counts=counts,
        imported=upserts.imported,
        updated=upserts.updated,
        unchanged=upserts.unchanged,
        seconds=time.perf_counter() - started,
    )


def _block_rows(handle: IO[str], counts: CsvCounts) -> Iterator[Row]:
    for block in scan_number_blocks(handle, counts):
        yield (block.prefix, block.category, block.carrier)


def _company_rows(handle: IO[str], counts: CsvCounts) -> Iterator[Row]:
    for line in scan_company_lines(handle, counts):
        yield (line.number, line.company, line.ivr_path)


def import_number_blocks(url: str, path: Path, *, progress: Progress = no_progress) -> UpsertReport:
    """Adds the blocks of a number-block file; a block already known takes the file's
    category and carrier."""
    return _import_rows(url, path, _BLOCKS, _block_rows, progress)


def import_company_lines(url: str, path: Path, *, progress: Progress = no_progress) -> UpsertReport:
    """Adds the lines of a company-lines file; a line already known takes the file's company
    and ivrPath."""
    return _import_rows(url, path, _COMPANY_LINES, _company_rows, progress)
