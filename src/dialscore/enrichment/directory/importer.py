"""``import_directory``: a directory file read, parsed and written into SQLite or PostgreSQL,
and the report of what became of it."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from dialscore.enrichment.directory import postgres_writer, sqlite_writer
from dialscore.enrichment.directory.blocks import (
    BLOCK_BYTES,
    LineReader,
    file_format,
    first_character,
)
from dialscore.enrichment.directory.columns import TABLE, csv_layout
from dialscore.enrichment.directory.companies import CompanyTableRows, company_table_rows
from dialscore.enrichment.directory.parsing import BlockResult
from dialscore.enrichment.directory.pool import (
    BlockParser,
    ChunkWork,
    Tally,
    pool_size,
    write_in_workers,
)
from dialscore.enrichment.directory.postgres_writer import PostgresWriter
from dialscore.enrichment.directory.rows import DirectoryCounts, Row, Writer, batches
from dialscore.enrichment.directory.sqlite_writer import SqliteWriter
from dialscore.kit.bulkload import Progress, analyze, connect, no_progress, prefetching
from dialscore.kit.linefiles import FileFormatError

# Rows per write transaction: on SQLite, 50 000 rows into a table of a million hold the write
# lock for about a second (the service's writers wait, busy_timeout is 30 s).
BATCH_ROWS = 50_000


@dataclass(frozen=True)
class DirectoryReport:
    """What became of a directory file: its lines and phones, and the records it added,
    changed or left as they were."""

    counts: DirectoryCounts
    format: str  # "csv" | "jsonl"
    imported: int
    updated: int
    unchanged: int
    seconds: float


@dataclass(frozen=True)
class _Import:
    """One import's file and settings."""

    url: str
    path: Path
    kind: str
    size: int
    workers: int
    batch_rows: int
    block_bytes: int
    progress: Progress


def import_directory(
    url: str,
    path: Path,
    *,
    progress: Progress = no_progress,
    batch_rows: int = BATCH_ROWS,
    block_bytes: int = BLOCK_BYTES,
    workers: int | None = None,
) -> DirectoryReport:
    """Imports a directory file (CSV or JSON Lines, see the package's documentation) into
    ``directory_people``; ``progress`` hears ("reading", bytes read, file size). ``workers``:
    processes that parse, and on SQLite write what they parse (0: none, this one parses;
    default: by the file's size and CPUs)."""
    started = time.perf_counter()
    kind = file_format(path)
    if kind == "jsonl" and first_character(path) == b"[":
        raise FileFormatError(
            "a JSON array: a directory file in JSON is JSON Lines, one object per line"
        )
    size = max(1, path.stat().st_size)
    task = _Import(
        url, path, kind, size, pool_size(size, workers), batch_rows, block_bytes, progress
    )
    counts = DirectoryCounts()
    writer: Writer
    with connect(url) as conn, path.open("rb") as handle:
        reader = LineReader(handle, kind)
        if conn.sqlite is not None:
            writer = _into_sqlite(conn.sqlite, task, reader, counts)
        else:
            assert conn.postgres is not None
            writer = _into_postgres(conn.postgres, task, reader, counts)
        progress("reading", size, size)
    return DirectoryReport(
        counts=counts,
        format=kind,
        imported=writer.imported,
        updated=writer.updated,
        unchanged=writer.unchanged,
        seconds=time.perf_counter() - started,
    )


def _into_sqlite(
    lite: sqlite3.Connection, task: _Import, reader: LineReader, counts: DirectoryCounts
) -> SqliteWriter:
    """On SQLite, an import into an empty directory appends its rows without indexes and
    counts the companies as it parses them; large files are parsed and written by workers."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="company-tables") as helper:
        tables: Future[CompanyTableRows] | None = None
        with sqlite_writer.indexes_deferred(lite) as deferred:
            now = datetime.now(UTC)
            writer = SqliteWriter(lite, now, deferred=deferred)
            tally = Tally(counts, writer, {} if deferred else None)
            workers = task.workers
            if workers and sqlite_writer.on_disk(lite):
                work = ChunkWork(task.url, task.path, task.kind, now, deferred, task.batch_rows)
                parser = write_in_workers(
                    work, workers, reader, task.block_bytes, tally, task.progress, task.size
                )
                workers = 0  # what is left is parsed here
            else:
                parser = BlockParser(reader, task.block_bytes, count_companies=deferred)
            _write_here(parser.results(workers), tally, task)
            _check_header(task, parser)
            tally.ids.add(writer.appended)
            if deferred:
                sqlite_writer.resolve_repeated_ids(writer, tally.ids.rowids())
            if tally.companies is not None:
                for key, people in writer.replaced.items():
                    tally.companies[key] -= people
                # Their rows are worked out on the helper thread while the indexes are built
                # (the database lets go of the interpreter meanwhile), and written after.
                tables = helper.submit(company_table_rows, tally.companies)
        sqlite_writer.write_company_tables(lite, tables, tally.ids.rows)
    return writer


def _into_postgres(
    pg: psycopg.Connection[Any], task: _Import, reader: LineReader, counts: DirectoryCounts
) -> PostgresWriter:
    """On PostgreSQL, workers parse large files and this process writes."""
    writer = PostgresWriter(pg, datetime.now(UTC))
    tally = Tally(counts, writer, None)
    parser = BlockParser(reader, task.block_bytes, count_companies=False)
    _write_here(parser.results(task.workers), tally, task)
    _check_header(task, parser)
    postgres_writer.write_company_tables(pg)
    analyze(pg, TABLE)
    return writer


def _write_here(results: Iterator[tuple[BlockResult, int]], tally: Tally, task: _Import) -> None:
    """Writes parsed blocks from this process, in batches."""

    def parsed() -> Iterator[tuple[list[Row], int]]:
        for result, position in results:
            tally.parsed(result.counts, result.companies)
            yield result.unpacked(), position

    # Parsed results are gathered into batches on a helper thread while this one writes (the
    # driver lets go of the interpreter while the database works).
    with prefetching(batches(parsed(), task.batch_rows)) as ready:
        for rows, position in ready:
            tally.write(rows)
            task.progress("reading", position, task.size)


def _check_header(task: _Import, parser: BlockParser) -> None:
    """Raises, saying what the file needs, when a CSV file had no header at all."""
    if task.kind == "csv" and parser.layout is None:
        csv_layout([])
