"""What one statement costs the embedded service, apart from the database's own work: the CPU
time (all threads) of ``SELECT 1`` sent ``--count`` times on a SQLite file in a temporary
directory, four ways, back to back:

- through an ``AsyncSession`` of ``kit.db.Database``, as the service sends every statement;
- with aiosqlite alone, in the four steps SQLAlchemy's adapter takes (a cursor, execute,
  fetch, close), each a trip to aiosqlite's thread and back;
- with aiosqlite alone in one trip (``execute_fetchall``);
- with the standard library's ``sqlite3`` on the calling thread.

    .venv/bin/python bench/statement_cost.py [--count 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite
from sqlalchemy import text

from dialscore.kit.db import Database

WARM_UP = 50


async def per_call(send: Callable[[], Awaitable[object]], count: int) -> float:
    """CPU microseconds of one ``send``, after a warm-up."""
    for _ in range(WARM_UP):
        await send()
    started = time.process_time()
    for _ in range(count):
        await send()
    return (time.process_time() - started) / count * 1e6


async def measure(folder: Path, count: int) -> list[tuple[str, float]]:
    path = folder / "bench.db"
    figures = []
    db = Database(f"sqlite:///{path}")
    try:
        async with db.read() as session:
            figures.append(
                (
                    "AsyncSession (SQLAlchemy + aiosqlite)",
                    await per_call(lambda: session.execute(text("SELECT 1")), count),
                )
            )
    finally:
        await db.dispose()
    async with aiosqlite.connect(path) as connection:

        async def four_trips() -> None:
            cursor = await connection.cursor()
            await cursor.execute("SELECT 1")
            await cursor.fetchall()
            await cursor.close()

        figures.append(("aiosqlite, four trips", await per_call(four_trips, count)))
        figures.append(
            (
                "aiosqlite, one trip",
                await per_call(lambda: connection.execute_fetchall("SELECT 1"), count),
            )
        )
    plain = sqlite3.connect(path)

    async def on_this_thread() -> None:
        plain.execute("SELECT 1").fetchall()

    try:
        figures.append(("sqlite3 on the calling thread", await per_call(on_this_thread, count)))
    finally:
        plain.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    if not 1 <= args.count <= 100_000:
        parser.error("--count must be 1..100000")
    folder = Path(tempfile.mkdtemp(prefix="dialscore-statements-"))
    try:
        figures = asyncio.run(measure(folder, args.count))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for name, micros in figures:
        print(f"{name}: {micros:.0f} µs CPU a statement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
