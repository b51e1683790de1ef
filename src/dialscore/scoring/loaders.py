"""Bulk loaders of number blocks and company lines: stream a file, parse it with
``scoring.imports`` and write it to SQLite or PostgreSQL in large batches through the driver
itself (no ORM on this path). Do-not-call lists have their own, ``scoring.dncload``."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from dialscore.kit.bulkload import (
    DriverConnection,
    Progress,
    analyze,
    connect,
    no_progress,
    sqlite_transaction,
)
from dialscore.kit.linefiles import LineCounts
from dialscore.scoring.imports import (
    CsvCounts,
    scan_company_lines,
    scan_number_blocks,
)

ROW_BATCH = 10_000


@dataclass(frozen=True)
class UpsertReport:
    """The outcome of one number-block or company-lines file."""

    counts: LineCounts
    imported: int
    updated: int
    unchanged: int
    seconds: float


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
