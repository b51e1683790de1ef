"""Bulk loading through the database driver itself (no ORM): connecting to SQLite or
PostgreSQL, write transactions, fresh statistics, progress callbacks, and parsing on a helper
thread while the database writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from sqlalchemy.engine import make_url

from dialscore.kit.db import sync_url

T = TypeVar("T")

# (phase, done, total): "reading" counts bytes of the file, "sorting" has no total (0), and
# "writing" counts numbers written to the list.
Progress = Callable[[str, int, int], None]


def no_progress(phase: str, done: int, total: int) -> None:
    """A progress callback that shows nothing."""


@dataclass
class DriverConnection:
    """A connection of one of the two drivers: ``sqlite`` or ``postgres`` is set."""

    sqlite: sqlite3.Connection | None = None
    postgres: psycopg.Connection[Any] | None = None


@contextmanager
def connect(url: str) -> Iterator[DriverConnection]:
    """A driver connection to the service's database, in autocommit (transactions are
    begun explicitly); SQLite in WAL mode, waiting up to 30 s for the service's writers."""
    parsed = make_url(sync_url(url))
    if parsed.get_backend_name() == "sqlite":
        lite = sqlite3.connect(parsed.database or "", isolation_level=None, timeout=30.0)
        try:
            for pragma in (
                "journal_mode=WAL",
                "busy_timeout=30000",
                "synchronous=NORMAL",
                # A large transaction grows the WAL; give the space back once checkpointed.
                "journal_size_limit=67108864",
            ):
                lite.execute(f"PRAGMA {pragma}")
            yield DriverConnection(sqlite=lite)
        finally:
            lite.close()
    else:
        conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(conninfo, autocommit=True) as pg:
            yield DriverConnection(postgres=pg)


@contextmanager
def sqlite_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction, committed when the block ends, rolled back when it raises."""
    # IMMEDIATE takes the write lock up front (waiting up to busy_timeout for the service).
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def analyze(conn: psycopg.Connection[Any], table: str) -> None:
    """Fresh planner statistics for a table a bulk load wrote (PostgreSQL)."""
    # At once: without them, after a bulk load, the planner read the scoring lookups' IN lists
    # as most of the table and scanned 10M rows for each (0.7 s a query).
    conn.execute(f"ANALYZE {table}")


@contextmanager
def prefetching(items: Iterator[T]) -> Iterator[Iterator[T]]:
    """The items, each produced on a helper thread while the caller works on the one before:
    parsing (Python, holding the GIL) overlaps with writing (the database driver, which
    releases it), so an import uses two cores. On exit, waits for the helper's item."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-parse") as helper:

        def prefetched() -> Iterator[T]:
            pending = helper.submit(next, items, None)
            while (item := pending.result()) is not None:
                pending = helper.submit(next, items, None)
                yield item

        yield prefetched()
