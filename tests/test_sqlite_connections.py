"""SQLite connections cut short: a unit of work cancelled amid a query must not leave its
write lock behind (the pool closes the connection; its open statement used to keep the
transaction alive until the garbage collector came by, stalling every writer meanwhile)."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from dialscore.kit.db import Database

# Long enough (tens of milliseconds or more) that the cancellation comes while it runs.
SLOW_QUERY = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000) "
    "SELECT i FROM n"
)


@pytest.fixture
def no_collection() -> Iterator[None]:
    """The garbage collector off: the lock must go when the connection closes, not when a
    collection happens to free the abandoned cursor."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def writable_now(path: Path) -> bool:
    """Whether another connection gets the write lock at once."""
    other = sqlite3.connect(path, isolation_level=None, timeout=0.1)
    try:
        other.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return False
    else:
        other.execute("ROLLBACK")
        return True
    finally:
        other.close()


async def test_a_unit_of_work_cancelled_amid_a_query_releases_the_write_lock(
    tmp_path: Path, no_collection: None
) -> None:
    path = tmp_path / "cut.db"
    db = Database(f"sqlite:///{path}")
    try:
        async with db.unit_of_work() as session:
            await session.execute(text("CREATE TABLE t (x INTEGER)"))
        querying = asyncio.Event()

        async def write_then_query() -> None:
            async with db.unit_of_work() as session:
                await session.execute(text("INSERT INTO t VALUES (1)"))  # the write lock
                querying.set()
                await session.execute(text(SLOW_QUERY))

        task = asyncio.create_task(write_then_query())
        await asyncio.wait_for(querying.wait(), timeout=5)
        task.cancel()
        await asyncio.wait({task}, timeout=10)
        assert task.cancelled()
        assert writable_now(path)
        async with db.read() as session:
            assert await session.scalar(text("SELECT count(*) FROM t")) == 0  # rolled back
    finally:
        await db.dispose()
