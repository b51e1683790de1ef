"""``kit.db.one_of``: a row whose column is one of many values, the values given as one
parameter (an array on PostgreSQL, a JSON array on SQLite), on both databases."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from sqlalchemy import select

from dialscore.kit.db import Database, one_of
from dialscore.models import CompanyLine, DncNumber

NUMBERS = [f"+1212555{i:04d}" for i in range(1500)]


def found(
    database_url: str,
    wanted_lines: Collection[str],
    wanted_listed: Collection[int],
    lines: Collection[str] = NUMBERS[::3],
) -> tuple[set[str], set[int]]:
    async def run() -> tuple[set[str], set[int]]:
        db = Database(database_url)
        try:
            async with db.unit_of_work() as session:
                session.add_all(CompanyLine(number=n) for n in lines)
                session.add_all(
                    DncNumber(number=int(n[1:]), list_name="federal") for n in NUMBERS[::5]
                )
            async with db.read() as session:
                found_lines = await session.scalars(
                    select(CompanyLine.number).where(
                        one_of(session, CompanyLine.number, wanted_lines)
                    )
                )
                listed = await session.scalars(
                    select(DncNumber.number).where(one_of(session, DncNumber.number, wanted_listed))
                )
                return set(found_lines), set(listed)
        finally:
            await db.dispose()

    return asyncio.run(run())


def test_many_values_find_their_rows(database_url: str) -> None:
    lines, listed = found(database_url, NUMBERS, [int(n[1:]) for n in NUMBERS[:100]])
    assert lines == set(NUMBERS[::3])
    assert listed == {int(n[1:]) for n in NUMBERS[:100:5]}


def test_no_values_find_nothing(database_url: str) -> None:
    assert found(database_url, [], []) == (set(), set())


def test_a_value_longer_than_the_column_finds_nothing(database_url: str) -> None:
    # The column holds 20 characters: a value that begins with a stored one is not it.
    stored = "+1212555000000000000"
    assert len(stored) == 20
    found_lines, _ = found(database_url, [stored + "1"], [], lines=[stored])
    assert found_lines == set()
