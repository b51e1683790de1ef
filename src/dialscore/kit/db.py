"""Database engines, sessions and column types shared by SQLite and PostgreSQL."""

from __future__ import annotations

import functools
import json
import sqlite3
import weakref
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    DateTime,
    String,
    Table,
    any_,
    bindparam,
    event,
    func,
    select,
)
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Dialect, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, QueryableAttribute
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.types import TypeDecorator

CREDIT_SCALE = 10_000
# The instants whose SQLite text a process keeps (UTCDateTime.bind_processor).
_INSTANTS_KEPT = 256


class Base(DeclarativeBase):
    pass


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both databases (SQLite stores naive text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given for a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def bind_processor(self, dialect: Dialect) -> Callable[[datetime | None], Any] | None:
        """On SQLite, the text a datetime is written as, remembered for the last few
        instants: the rows written together share a few (a batch's ``now``, its job's
        submission), and turning each into text again took a tenth of SQLAlchemy's time on
        a job's statements."""
        processor = super().bind_processor(dialect)
        if processor is None or dialect.name != "sqlite":
            return processor
        # Equal datetimes are one instant (an aware one never equals a naive one), whose
        # UTC text is the same: a remembered text is the one processor would make.
        return functools.lru_cache(maxsize=_INSTANTS_KEPT)(processor)


class Credits(TypeDecorator[Decimal]):
    """Exact credit amounts, stored as integer ten-thousandths of a credit."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: Decimal | int | None, dialect: Dialect) -> int | None:
        if value is None:
            return None
        return int((Decimal(value) * CREDIT_SCALE).to_integral_value())

    def process_result_value(self, value: int | None, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        return Decimal(value) / CREDIT_SCALE

    @property
    def python_type(self) -> type[Decimal]:
        return Decimal


def table_of(model: type[Base]) -> Table:
    """The table a model is mapped to, for statements run once with many rows (executemany),
    which the ORM's bulk paths would first turn into objects' states."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


def _dialect_name(session: AsyncSession) -> str:
    """The name of the database ``session`` talks to: ``sqlite`` or ``postgresql``."""
    return session.get_bind().dialect.name


def upsert(session: AsyncSession, model: type[Base]) -> pg_dialect.Insert | sqlite_dialect.Insert:
    """An INSERT into the model's table in the session's dialect, which can say what to do
    with a row already there (``on_conflict_do_update``, ``on_conflict_do_nothing``). Into
    the table (``table_of``): run with many rows, it needs none of the ORM's bookkeeping
    for each."""
    if _dialect_name(session) == "postgresql":
        return pg_dialect.insert(table_of(model))
    return sqlite_dialect.insert(table_of(model))


def one_of(
    session: AsyncSession, column: QueryableAttribute[Any], values: Collection[Any]
) -> ColumnElement[bool]:
    """A condition that holds for a row whose ``column`` is one of ``values``, the values
    given as one parameter: an array on PostgreSQL (``= ANY``), a JSON array SQLite reads
    with ``json_each``. The statement is the same whatever their count, compiled once and
    prepared once by the database; an IN list has a parameter a value, and SQL rendered
    and prepared anew for each count (about 2.6 times the CPU for 1500 values, in chunks of
    500). Both databases search the column's index for each value."""
    listed = list(values)
    if _dialect_name(session) == "postgresql":
        # Text without the column's length: a cast to VARCHAR(n) would cut longer values to
        # n characters, and find what they begin with.
        element = String() if isinstance(column.type, String) else column.type
        return column == any_(bindparam(None, listed, type_=pg_dialect.ARRAY(element)))
    given = func.json_each(bindparam(None, json_text(listed), type_=String)).table_valued("value")
    return column.in_(select(given.c.value))


def changed_rows(result: object) -> int:
    """How many rows an UPDATE or DELETE changed (``rowcount``, which SQLAlchemy's result
    type for a statement does not declare)."""
    return int(getattr(result, "rowcount", 0) or 0)


def _driver_url(url: str, *, sqlite_driver: str) -> str:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return parsed.set(drivername=sqlite_driver).render_as_string(hide_password=False)
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    raise ValueError(f"unsupported database: {backend} (use sqlite or postgresql)")


def async_url(url: str) -> str:
    """The async driver form of a database URL given in any common spelling."""
    return _driver_url(url, sqlite_driver="sqlite+aiosqlite")


def sync_url(url: str) -> str:
    """The synchronous driver form (for migrations) of a database URL."""
    return _driver_url(url, sqlite_driver="sqlite")


SQLITE_MMAP_BYTES = 1 << 30
SQLITE_CACHE_KIB = 32 << 10


class ClosingConnection(sqlite3.Connection):
    """A SQLite connection that closes the cursors it made before it closes itself.

    A statement still open keeps a closed connection alive, transaction and locks included,
    until the cursor holding it is garbage collected (Python 3.11's sqlite3 leaves its
    statements to SQLite's close_v2). A coroutine cancelled amid a query leaves just such a
    cursor in its traceback, and the pool closes the connection it was using: the write lock
    of its transaction then stalled every other writer for up to the busy timeout."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cursors: weakref.WeakSet[sqlite3.Cursor] = weakref.WeakSet()

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        cursor = super().cursor(*args, **kwargs)
        self._cursors.add(cursor)
        return cursor

    # The shortcuts make their cursors in C, past cursor(): made here through it instead.
    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, parameters)

    def executescript(self, script: str, /) -> Any:
        return self.cursor().executescript(script)

    def close(self) -> None:
        for cursor in list(self._cursors):
            cursor.close()  # finalizes its statement
        super().close()  # rolls back what is left of the transaction


def configure_sqlite(engine: Any) -> None:
    """WAL, a busy timeout, and explicit BEGIN so writers can ask for BEGIN IMMEDIATE."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # Reads of a large directory land at random: the file mapped (read-only pages the OS
        # shares between connections) saves a system call per page, and a larger page cache
        # keeps the indexes' upper levels.
        cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A writer that starts with a deferred BEGIN can fail to upgrade its lock under
        # contention; BEGIN IMMEDIATE takes the write lock up front and waits for it.
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def json_text(value: Any) -> str:
    """What a JSON column holds, written by orjson: the events and contacts written in bulk are
    most of what a job writes, and orjson encodes them several times faster than the
    standard library. Keys that are not strings are written as strings, as ``json`` does;
    a float that is not finite is written as null (JSON has no NaN). What orjson refuses and
    the standard library writes (an integer beyond 64 bits, nesting deeper than 254 levels:
    a client's own fields may hold either) is written by the standard library. Columns are
    read with the standard library, which reads whatever either wrote: orjson reads an
    integer beyond 64 bits as a float."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value)


class Database:
    """One engine and two session factories: ``write`` for units of work, ``read`` for reads."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = url
        self.is_sqlite = make_url(url).get_backend_name() == "sqlite"
        kwargs: dict[str, Any] = {"echo": echo, "json_serializer": json_text}
        if self.is_sqlite:
            kwargs.update(connect_args={"factory": ClosingConnection})
        else:
            kwargs.update(pool_size=10, max_overflow=20, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(async_url(url), **kwargs)
        write_engine = self.engine
        if self.is_sqlite:
            configure_sqlite(self.engine.sync_engine)
            write_engine = self.engine.execution_options(sqlite_immediate=True)
        self.write = async_sessionmaker(write_engine, expire_on_commit=False)
        self.read = async_sessionmaker(self.engine, expire_on_commit=False)

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[AsyncSession]:
        """A write session that commits when the block ends without error."""
        async with self.write() as session:
            yield session
            await session.commit()

    async def dispose(self) -> None:
        await self.engine.dispose()
