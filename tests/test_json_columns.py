"""What JSON columns hold (kit.db.json_text): orjson's text, the standard library's where
orjson refuses a value; read back by the standard library as the value written. And what a
UTC column's bind writes on SQLite: the same text for the same instant, however often it is
asked (kit.db.UTCDateTime)."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.dialects import sqlite

from dialscore.kit.db import Database, UTCDateTime, json_text
from dialscore.migrations import upgrade
from dialscore.models import OutboxMessage


def nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        {"phones": [{"number": "+14155552671", "callableNow": True, "rate": 0.25}]},
        {"big": -(10**4299)},  # beyond 64 bits: the standard library writes it
        {"x": nested(300)},  # deeper than orjson goes
        "Zoë, naïve ☎",
    ],
)
def test_a_value_reads_back_as_written(value: Any) -> None:
    assert json.loads(json_text(value)) == value


def test_keys_that_are_not_strings_are_written_as_json_writes_them() -> None:
    assert json.loads(json_text({1: "a", "b": 2})) == json.loads(json.dumps({1: "a", "b": 2}))


def test_a_float_that_is_not_finite_is_written_as_null() -> None:
    assert json.loads(json_text({"rate": math.nan, "cap": math.inf})) == {
        "rate": None,
        "cap": None,
    }


def test_a_column_round_trips_through_the_database(database_url: str) -> None:
    # 10**30 fits orjson's writing (as text) but not its reading, which makes it a float.
    payload = {"big": 10**30, "deep": nested(300), "name": "Zoë"}
    now = datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC)

    async def run() -> Any:
        db = Database(database_url)
        try:
            async with db.unit_of_work() as session:
                session.add(
                    OutboxMessage(actor="x", payload=payload, available_at=now, created_at=now)
                )
            async with db.read() as session:
                return (await session.scalars(select(OutboxMessage.payload))).one()
        finally:
            await db.dispose()

    assert asyncio.run(run()) == payload


def test_an_instant_is_written_as_the_same_text_each_time() -> None:
    dialect = sqlite.dialect()
    remembered = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert remembered is not None
    instant = datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC)
    same_elsewhere = instant.astimezone(timezone(timedelta(hours=-5)))
    texts = {remembered(instant), remembered(same_elsewhere), remembered(instant)}
    assert texts == {"2026-11-29 12:00:00.123456"}
    assert remembered(instant + timedelta(microseconds=1)) == "2026-11-29 12:00:00.123457"
    assert remembered(None) is None
    with pytest.raises(ValueError, match="naive"):
        remembered(datetime(2026, 11, 29, 12, 0))  # naive: refused


def test_an_instant_reads_back_from_sqlite_as_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    upgrade(url)
    instant = datetime(2026, 11, 29, 7, 0, 0, 5, tzinfo=timezone(timedelta(hours=-5)))

    async def run() -> tuple[Any, Any]:
        db = Database(url)
        try:
            async with db.unit_of_work() as session:
                for _ in range(2):
                    session.add(
                        OutboxMessage(
                            actor="x", payload={}, available_at=instant, created_at=instant
                        )
                    )
            async with db.read() as session:
                stored = (await session.execute(text("SELECT available_at FROM outbox"))).all()
                read = (await session.scalars(select(OutboxMessage.available_at))).all()
                return stored, read
        finally:
            await db.dispose()

    stored, read = asyncio.run(run())
    assert [row[0] for row in stored] == ["2026-11-29 12:00:00.000005"] * 2
    assert read == [instant, instant]
